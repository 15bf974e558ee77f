// Package load is bench-serve's load phase: requests sent on a schedule
// (open loop, at a rate) or by a fixed number of streams (closed loop),
// each point's requests written to the run directory as they end and
// summarised as a bench.LoadPoint, and the search for the highest rate a
// server carries under an SLO. The definitions follow `vllm bench serve`;
// docs/bench-serve.md states each.
package load
