// Stand-in binaries for hack/envtest-bins/selftest.sh: quick to build, so CI can run build.sh's
// cold path (no Go caches, no cache directory) in seconds.
module envtestbins/selftest

go 1.26.0
