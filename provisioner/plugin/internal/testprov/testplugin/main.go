// Command testplugin is the provisioner plugin of the host tests. It behaves according to its
// file name, exporterset-provisioner-<mode>[.<anything>], so that one build serves every test,
// and serves the provisioner name <mode>[-<anything>].test.example.dev, so that copies under
// different names serve different names:
//
//	ok (or anything else)  serves testprov.Provisioner
//	dup                    serves container.example.dev, the example plugin's name
//	hang-render            RenderPod never returns
//	hang-describe          Describe never returns
//	exit-in-render         RenderPod ends the process
//	no-names               Describe returns no names
//	bad-handshake          prints a line that is not a handshake, then waits
//	crash-at-start         writes an error and exits 3 before serving
//	hang-at-start          never handshakes
//	wrong-protocol         serves plugin protocol version 99 only
//	netrpc                 serves go-plugin's net/rpc protocol instead of gRPC
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	goplugin "github.com/hashicorp/go-plugin"

	"github.com/exporterset/exporterset/provisioner/plugin"
	"github.com/exporterset/exporterset/provisioner/plugin/internal/testprov"
	"github.com/exporterset/exporterset/provisioner/plugin/internal/wire"
)

func main() {
	base := strings.TrimPrefix(filepath.Base(os.Args[0]), plugin.BinaryPrefix)
	mode, _, _ := strings.Cut(base, ".")
	p := testprov.Provisioner{Names: []string{strings.ReplaceAll(base, ".", "-") + ".test.example.dev"}}
	switch mode {
	case "dup":
		p.Names = []string{"container.example.dev"}
	case "hang-render":
		p.HangRenderPod = true
	case "hang-describe":
		p.HangDescribe = true
	case "exit-in-render":
		p.ExitInRenderPod = true
	case "no-names":
		p.NoNames = true
	case "bad-handshake":
		fmt.Println("hello, I am not a plugin")
		time.Sleep(time.Minute)
		return
	case "crash-at-start":
		fmt.Fprintln(os.Stderr, "testplugin: cannot open the licence file")
		os.Exit(3)
	case "hang-at-start":
		time.Sleep(time.Hour)
		return
	case "wrong-protocol":
		goplugin.Serve(&goplugin.ServeConfig{
			HandshakeConfig:  wire.Handshake(),
			VersionedPlugins: map[int]goplugin.PluginSet{99: wire.VersionedPlugins(p)[1]},
			GRPCServer:       goplugin.DefaultGRPCServer,
		})
		return
	case "netrpc":
		goplugin.Serve(&goplugin.ServeConfig{
			HandshakeConfig:  wire.Handshake(),
			VersionedPlugins: wire.VersionedPlugins(p),
		})
		return
	}
	if err := plugin.Serve(p); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
