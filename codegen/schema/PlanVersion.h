// Version of the plan format written by codegen and accepted by the runtime.
#pragma once
namespace plait {
// 2: training plans (updates, schedule); 3: collectives, shards; 4: kernel workspace (per
// instruction and per rank), planned peak per rank; 5: fused_elementwise programs with bf16
// inputs and results and the round_bf16 opcode (codegen/schema/FusedElementwise.h); 6:
// fused_elementwise instructions of four integers (where is ternary) and the opcodes of
// log through where (comparisons and logic on values held in registers); 7: the lr and
// prev_lr hyper-parameters are f64 (the CUDA backend reads the lr as a double).
inline constexpr unsigned kPlanVersion = 7;
}
