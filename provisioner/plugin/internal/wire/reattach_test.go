package wire_test

import (
	"strings"
	"testing"

	"github.com/exporterset/exporterset/provisioner/plugin/internal/wire"
)

func TestReattachConfigs(t *testing.T) {
	in := map[string]wire.ReattachConfig{
		"b": {Protocol: "grpc", ProtocolVersion: 1, Pid: 2, Test: true, Addr: wire.ReattachAddr{Network: "unix", String: "/tmp/plugin1"}},
		"a": {Protocol: "grpc", ProtocolVersion: 1, Pid: 1, Addr: wire.ReattachAddr{Network: "tcp", String: "127.0.0.1:1234"}},
	}
	line, err := wire.FormatReattachConfigs(in)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"a":{"Protocol":"grpc","ProtocolVersion":1,"Pid":1,"Test":false,"Addr":{"Network":"tcp","String":"127.0.0.1:1234"}},` +
		`"b":{"Protocol":"grpc","ProtocolVersion":1,"Pid":2,"Test":true,"Addr":{"Network":"unix","String":"/tmp/plugin1"}}}`
	if line != want {
		t.Errorf("got  %s\nwant %s", line, want)
	}
	out, err := wire.ParseReattachConfigs(line)
	if err != nil || len(out) != 2 || out["b"] != in["b"] {
		t.Fatalf("parsed %+v, %v", out, err)
	}
	gp, err := out["b"].GoPlugin()
	if err != nil || gp.Addr.String() != "/tmp/plugin1" || gp.Addr.Network() != "unix" || !gp.Test || gp.Pid != 2 {
		t.Errorf("go-plugin form %+v, %v", gp, err)
	}
	if m, err := wire.ParseReattachConfigs(""); m != nil || err != nil {
		t.Errorf("empty: %v, %v", m, err)
	}
	for _, bad := range []struct{ value, want string }{
		{`{"x":{"Protocol":"netrpc","ProtocolVersion":1,"Addr":{"Network":"unix","String":"/s"}}}`, `protocol "netrpc" is not supported`},
		{`{"x":{"Protocol":"grpc","ProtocolVersion":7,"Addr":{"Network":"unix","String":"/s"}}}`, "version 7 is not supported"},
		{`{"x":{"Protocol":"grpc","ProtocolVersion":1,"Addr":{"Network":"udp","String":"/s"}}}`, `network "udp"`},
		{`not json`, wire.EnvReattach},
	} {
		if _, err := wire.ParseReattachConfigs(bad.value); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: error %v, want it to contain %q", bad.value, err, bad.want)
		}
	}
}
