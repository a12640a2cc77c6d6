// ppb/timeline_svg.hpp — a simulated iteration as a picture (host_api/docs/design.md, "The
// simulator"): one row per stage with its forward and backward blocks, and each stage's memory over
// time beneath.
//
// A plain SVG document that opens in any browser: no scripts, no external resources. Each
// operation is one <rect class="op"> with data-stage, data-chunk, data-micro-batch, data-pass
// ("forward" or "backward"), data-start and data-end attributes, so tools can read the picture
// back.
#ifndef PPB_TIMELINE_SVG_HPP
#define PPB_TIMELINE_SVG_HPP

#include <ppb/simulator.hpp>

#include <string>

namespace ppb {

struct TimelineOptions {
    std::string title;         // shown above the timeline; empty = a summary of the simulation
    double width_px = 1200.0;  // of the time axis
};

// Blocks are coloured by chunk, forwards light and backwards dark; the recomputation part of a
// backward (SimulatedOperation::recompute_time) is hatched. Micro-batch numbers are written in
// blocks wide enough for them. The memory panel is drawn when the simulation has memory. The legend
// takes as many lines as the width needs.
[[nodiscard]] std::string timeline_svg(const Simulation& simulation,
                                       const TimelineOptions& options = {});

// The width of the picture timeline_svg() draws with `options`, in its units (its width
// attribute and its viewBox's): the time axis, the stage labels left of it and a margin. A page
// that scales the picture knows from it how large its 11-unit text is on screen.
[[nodiscard]] double timeline_svg_width(const TimelineOptions& options = {});

}  // namespace ppb

#endif  // PPB_TIMELINE_SVG_HPP
