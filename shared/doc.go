// Package shared is the root of the data types that the backend, the panel
// and the gpu module exchange: serving events (package events), the live
// snapshot (package snapshot), bench-serve plans, runs, jobs and history
// (package bench) and the API's error body (package apierror).
//
// The packages hold types and pure functions only, so that the panel's
// WebAssembly build stays small and nothing here touches the network or disk.
package shared
