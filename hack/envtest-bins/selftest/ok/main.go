// Command ok stands in for a control-plane binary: it prints its name and the version that
// build.sh stamps into it, as the real binaries' --version does.
package main

import "fmt"

var version = "unset"

func main() { fmt.Println("selftest " + version) }
