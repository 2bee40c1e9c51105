// Alert rules: the few things that mean a run needs a person, evaluated on a RunHistory each frame.
//   non-finite loss      the latest training loss is NaN or infinite
//   loss-scale collapse  the loss scale is below 1, or 2^10 below the highest it has been
//   stalled run          no record for `stall_seconds` while the run has steps left
//   throughput drop      the latest sequences/s is under half the median of the records before it
#pragma once

#include <string>
#include <vector>

#include "run_history.hpp"

namespace loom::dash {

struct AlertThresholds {
  double stall_seconds = 120;         ///< no record for this long → stalled
  double scale_collapse_log2 = 10;    ///< scale this many powers of two under its peak → collapse
  double throughput_fraction = 0.5;   ///< latest below this fraction of the median → drop
  size_t throughput_window = 20;      ///< records before the latest that make the median (at least 5)
};

struct Alert {
  std::string rule;     ///< "non-finite loss", "loss-scale collapse", "stalled run", "throughput drop"
  std::string message;  ///< what was seen, with numbers
};

/// The alerts that hold now (`now`: the clock RunHistory::ingest was given).
std::vector<Alert> evaluate_alerts(const RunHistory& history, double now, const AlertThresholds& thresholds = {});

}  // namespace loom::dash
