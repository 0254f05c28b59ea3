// Every plait pass, declared once; TableGen writes the declarations and create functions.
#ifndef PLAIT_PASSES_TD
#define PLAIT_PASSES_TD

include "mlir/Pass/PassBase.td"

def TestPrintMemoryPlanPass : Pass<"plait-test-print-memory-plan", "mlir::ModuleOp"> {
  let summary = "Print the arena plan of every function (for tests)";
  let description = [{
    Runs the memory-plan analysis (liveness over program order, then offsets in one arena)
    and prints, per function, the arena size, the liveness lower bound and one line per
    buffer:

    ```
    memory-plan @main: arena = 192, lower_bound = 192, values = 3
      %0 "x" input: offset = 0, size = 64, live = [0, 1]
    ```
  }];
  let options = [
    Option<"alignment", "alignment", "int64_t", "64", "Byte alignment of every buffer">
  ];
}

#endif // PLAIT_PASSES_TD
