// Version of the plan format written by codegen and accepted by the runtime.
#pragma once
namespace plait {
// 2: training plans (updates, schedule); 3: collectives, shards; 4: kernel workspace (per
// instruction and per rank), planned peak per rank.
inline constexpr unsigned kPlanVersion = 4;
}
