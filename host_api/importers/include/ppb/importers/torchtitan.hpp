// ppb/importers/torchtitan.hpp — the peak reserved memory torchtitan logs at each logged step,
//
//   [rank0]:[titan] 2026-08-21 21:30:21,123 - root - INFO - step:  1  loss: 12.25000
//       grad_norm:  1.2345  memory: 19.05GiB(20.06%)  tps: 1,234  tflops: 61.70  mfu: 19.76%
//
// (one line; pytorch/torchtitan, torchtitan/components/metrics.py MetricsProcessor.log and
// log_validation at commit b5bcd76c66d0acb1a08b176d9639425bc55e0b2a: "memory: {:5.2f}GiB({:.2f}%)"
// of torch.cuda.memory_stats()'s "reserved_bytes.all.peak", in GiB of 2^30 bytes; the peak
// statistics are reset after each logged step, so each line is the peak since the one before).
// Each field may be wrapped in ANSI colour codes (metrics.disable_color_printing off, the
// default) or not. torchrun's --tee with --local-ranks-filter (torchtitan's run_train.sh, LOG_RANK)
// prefixes each line with "[rank<local rank>]:"; only the ranks it lets through log. A line without
// the prefix (COMM_MODE=fake_backend runs one process without torchrun) takes its log's rank
// (--rank FILE=ID or the path, logs.hpp).
#ifndef PPB_IMPORTERS_TORCHTITAN_HPP
#define PPB_IMPORTERS_TORCHTITAN_HPP

#include <ppb/importers/layout.hpp>
#include <ppb/importers/logs.hpp>

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ppb::importers {

// `text` without its ANSI escape sequences (ESC '[' parameters final-byte).
[[nodiscard]] std::string without_ansi_codes(std::string_view text);

// Each rank's largest "memory:" figure over its step lines (training and validation steps), in
// MB (MiB): torchtitan logs the peak reserved memory, so the reading's `mb` and `reserved_mb` are
// both that figure (noted: the logs give no allocated memory). A log named on the command line
// must hold a step line with a memory figure; a log found in a directory without one is skipped
// (noted). Throws InputError "<file>:<line>: <problem>".
[[nodiscard]] std::vector<MemoryReading> scan_torchtitan_logs(std::span<const LogFile> logs,
                                                              Messages& messages);

}  // namespace ppb::importers

#endif  // PPB_IMPORTERS_TORCHTITAN_HPP
