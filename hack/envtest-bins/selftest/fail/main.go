// Command fail does not compile, on purpose: build.sh must stop with the compiler's own message.
package main

func main() { var n int = "envtest-bins selftest: this build fails on purpose" }
