// Package svgplot draws small standalone SVG charts with the standard
// library only: panels stacked in one figure with a shared legend, linear
// (1-2-5 ticks), logarithmic or categorical axes, and series that stay
// distinguishable when they overlap (each style has its own colour, dash
// pattern and marker; a series can be offset by a few pixels). The
// benchmarks' --plot outputs use it.
package svgplot
