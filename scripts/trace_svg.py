#!/usr/bin/env python3
"""Draws a trace written by `xlac-run --trace` (Chrome trace-event JSON) as an
SVG, for the docs (Perfetto does this interactively: this is a still picture).

Two panels: the whole trace, and the last run zoomed in. One row of lanes
per track (thread, device stream); a slice inside another is drawn one lane
lower; colours by category (run, op, cluster launch, fallback, compile, disk).
Usage: trace_svg.py TRACE.json OUT.svg
"""
import html
import json
import sys

COLOURS = {"run": "#9aa7b8", "cluster launch": "#4a6fa5", "fallback": "#e0a040",
           "compile": "#c0504d", "disk": "#8064a2"}
OP_COLOUR = "#7fb77e"
LANE, GAP, LEFT, WIDTH = 18, 10, 120, 980


def lanes(events):
    """Depth of each event in its track: slices nest, so a stack by end time."""
    depth, stacks = {}, {}
    for e in sorted(events, key=lambda e: (e["tid"], e["ts"], -e["dur"])):
        st = stacks.setdefault(e["tid"], [])
        while st and st[-1]["ts"] + st[-1]["dur"] <= e["ts"] + 1e-3:
            st.pop()
        depth[id(e)] = len(st)
        st.append(e)
    return depth


def panel(out, events, names, t0, t1, y, title):
    depth = lanes(events)
    tids = sorted({e["tid"] for e in events})
    out.append('<text x="10" y="%d" font-weight="bold">%s</text>' % (y + 14, html.escape(title)))
    y += 24
    scale = (WIDTH - LEFT - 10) / max(t1 - t0, 1e-9)
    out.append('<text x="%d" y="%d" fill="#555">0</text>' % (LEFT, y + 10))
    out.append('<text x="%d" y="%d" fill="#555" text-anchor="end">%.3f ms</text>'
               % (WIDTH - 10, y + 10, (t1 - t0) / 1e3))
    y += 16
    for tid in tids:
        mine = [e for e in events if e["tid"] == tid]
        rows = 1 + max(depth[id(e)] for e in mine)
        out.append('<text x="10" y="%d">%s</text>' % (y + 13, html.escape(names.get(tid, "thread %d" % tid))))
        for e in mine:
            x = LEFT + (e["ts"] - t0) * scale
            w = max(e["dur"] * scale, 1)
            yy = y + depth[id(e)] * LANE
            c = COLOURS.get(e["cat"], OP_COLOUR)
            label = e["name"] if w > 7 * len(e["name"]) else ""
            out.append('<g><title>%s (%s) %.1f us</title><rect x="%.1f" y="%d" width="%.1f" height="%d" '
                       'fill="%s" stroke="#fff" stroke-width="0.5"/>%s</g>'
                       % (html.escape(e["name"]), html.escape(e["cat"]), e["dur"], x, yy, w, LANE - 2, c,
                          '<text x="%.1f" y="%d" fill="#fff">%s</text>' % (x + 3, yy + 12, html.escape(label))
                          if label else ""))
        y += rows * LANE + GAP
    return y + 10


def legend(out, y):
    x = 10
    for name, c in list(COLOURS.items()) + [("op (per op)", OP_COLOUR)]:
        out.append('<rect x="%d" y="%d" width="12" height="12" fill="%s"/>' % (x, y, c))
        out.append('<text x="%d" y="%d">%s</text>' % (x + 16, y + 11, html.escape(name)))
        x += 30 + 7 * len(name)
    return y + 24


def main(src, dst):
    doc = json.load(open(src))
    ev = doc["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in ev if e.get("ph") == "M" and e.get("name") == "thread_name"}
    xs = [e for e in ev if e.get("ph") == "X"]
    runs = [e for e in xs if e["cat"] == "run"]
    out = []
    y = panel(out, xs, names, min(e["ts"] for e in xs), max(e["ts"] + e["dur"] for e in xs), 0,
              "The whole trace: %d runs; compiles dominate the first ones" % len(runs))
    last = max(runs, key=lambda e: e["ts"])
    zoom = [e for e in xs if e["tid"] == last["tid"] and e["ts"] >= last["ts"] - 1e-3
            and e["ts"] + e["dur"] <= last["ts"] + last["dur"] + 1e-3]
    y = panel(out, zoom, names, last["ts"], last["ts"] + last["dur"], y, "The last run, zoomed in (%s)" % last["name"])
    y = legend(out, y)
    with open(dst, "w") as f:
        f.write('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="Helvetica, Arial, '
                'sans-serif" font-size="11"><rect width="100%%" height="100%%" fill="#fff"/>\n' % (WIDTH, y))
        f.write("\n".join(out))
        f.write("\n</svg>\n")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: trace_svg.py TRACE.json OUT.svg")
    main(sys.argv[1], sys.argv[2])
