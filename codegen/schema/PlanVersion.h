// Version of the plan format written by codegen and accepted by the runtime.
#pragma once
namespace plait {
inline constexpr unsigned kPlanVersion = 3; // 2: training plans (updates, schedule); 3: collectives, shards
}
