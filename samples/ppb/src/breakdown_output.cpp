#include "breakdown_output.hpp"

#include "cli.hpp"
#include "text_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace ppb::cli {

std::string render_iteration_breakdown(const IterationBreakdown& b, std::string_view unit) {
    using A = TextTable::Align;
    TextTable table({"PART", "TIME", "SHARE", "WHAT"}, {A::left, A::right, A::right, A::left});
    const auto row = [&](const char* part, double time, const char* what) {
        const double share = b.iteration > 0.0 ? 100.0 * time / b.iteration : 0.0;
        table.add_row({part, fmt::format("{:.1f}", time), fmt::format("{:.1f} %", share), what});
    };
    row("work", b.work, "the mean stage's forwards and backwards, recomputation left out");
    row("ideal", b.ideal, "the schedule's bubble with that work spread evenly");
    row("imbalance", b.imbalance, "what uneven stages and chunks add");
    row("communication", b.communication, "what the transfers between stages add");
    row("recompute", b.recompute, "the mean stage's recomputation");
    row("iteration", b.iteration, "the simulated iteration, the sum of the above");
    return fmt::format(
               "\nIteration breakdown (as SAPP reads its bubble: ideal + imbalance + communication "
               "+ recompute; times {}):\n",
               time_unit_phrase(unit)) +
           table.render(2);
}

std::string comm_time_text(const std::vector<double>& boundary, std::uint32_t num_stages,
                           std::string_view unit) {
    const std::string with_unit = unit.empty() ? std::string() : fmt::format(" {}", unit);
    if (std::all_of(boundary.begin(), boundary.end(), [](double c) { return c == 0.0; }))
        return "none";
    if (std::all_of(boundary.begin(), boundary.end(),
                    [&](double c) { return c == boundary.front(); }))
        return fmt::format("{:g}{} on every boundary", boundary.front(), with_unit);
    std::string values;
    std::string between;
    const std::size_t n = boundary.size();
    for (std::size_t b = 0; b < n; ++b) {
        values += fmt::format("{}{:g}", b == 0 ? "" : ", ", boundary[b]);
        // With a wrap (interleaved), boundary n − 1 goes from the last stage back to stage 0.
        between += fmt::format("{}{}-{}", b == 0 ? "" : ", ", b, b + 1 == num_stages ? 0 : b + 1);
    }
    return fmt::format("{}{} (per boundary {})", values, with_unit, between);
}

void check_comm_times(const std::vector<double>& values) {
    for (const double c : values) {
        if (!std::isfinite(c) || c < 0.0) {
            throw UsageError(fmt::format(
                "--comm-time: {} is not a time: give a finite number, at least 0, in the layer "
                "times' unit (one for every stage boundary, or one per boundary)",
                c));
        }
    }
}

}  // namespace ppb::cli
