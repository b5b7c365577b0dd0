// Package probe checks, against a live store, the guarantees a backend's
// Capabilities claim. "S3-compatible" stores differ exactly where silt
// depends on them: some accept If-None-Match and If-Match and ignore them,
// some answer If-Match on a missing key wrongly, some proxies strip the
// headers. Such a store looks fine until two writers race, so silt probes
// it once at setup instead.
package probe
