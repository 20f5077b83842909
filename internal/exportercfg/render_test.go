package exportercfg

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// sameConfig compares configs by value: driver configs and hooks as the JSON they hold
// (Render sorts keys and YAML rewrites number forms), a nil map as an empty one, and not the
// keys an entry was parsed from.
var sameConfig = cmp.Options{
	cmpopts.IgnoreUnexported(Driver{}, Hooks{}, Hook{}),
	// `hooks: {}` renders as no hooks.
	cmp.Transformer("hooks", func(h *Hooks) *Hooks {
		if h.Empty() {
			return nil
		}
		return h
	}),
	cmp.FilterPath(func(p cmp.Path) bool { return p.Last().Type().Kind() == reflect.Map }, cmpopts.EquateEmpty()),
	cmp.Transformer("JSON", func(m json.RawMessage) any {
		if len(m) == 0 {
			return nil
		}
		var v any
		if err := json.Unmarshal(m, &v); err != nil {
			return "invalid JSON: " + string(m)
		}
		return v
	}),
}

// full is a config with every field set, as the controller builds one.
func full() *Config {
	return &Config{
		APIVersion: APIVersion,
		Kind:       Kind,
		Metadata:   Metadata{Namespace: "lab", Name: "pool-7kq2p"},
		Endpoint:   "grpc.jumpstarter.example:443",
		TLS:        TLS{CA: goodCA},
		Token:      "abc.def",
		Export: map[string]Driver{
			"qemu":   {Type: "jumpstarter_driver_qemu.driver.Qemu", Config: json.RawMessage(`{"smp": 2, "arch": "x86_64", "hostfwd": {"ssh": {"port": 2222}}, "ratio": 0.5, "list": [1, "a", null, true]}`)},
			"power":  {Ref: "qemu.power"},
			"serial": {Type: "jumpstarter_driver_pyserial.driver.PySerial"},
		},
		ExitOnLeaseEnd: true,
	}
}

func TestRenderParseRoundTrip(t *testing.T) {
	for name, edit := range map[string]func(*Config){
		"full":       func(*Config) {},
		"no drivers": func(c *Config) { c.Export = nil },
		"in place":   func(c *Config) { c.ExitOnLeaseEnd = false },
		"insecure":   func(c *Config) { c.TLS = TLS{Insecure: true} },
		"hooks": func(c *Config) {
			c.Hooks = &Hooks{BeforeLease: &Hook{Script: "echo hi", Timeout: ptr(30)}, AfterLease: &Hook{Exec: "/bin/bash", Script: "exit 1", OnFailure: OnFailureExit}}
		},
		"yaml-ish":    func(c *Config) { c.Token, c.Metadata.Name, c.Endpoint = "0123", "true", "[::1]:8082" },
		"odd strings": func(c *Config) { c.Token = "a: b\n- c # d\t'\"<&>" },
		"empty":       func(c *Config) { *c = Config{} },
		"null config": func(c *Config) { c.Export["null"] = Driver{Type: "x.Null", Config: json.RawMessage("null")} },
	} {
		t.Run(name, func(t *testing.T) {
			in := full()
			edit(in)
			y, err := Render(in)
			if err != nil {
				t.Fatal(err)
			}
			out, err := Parse(y)
			if err != nil {
				t.Fatalf("Parse of the rendered config: %v\n%s", err, y)
			}
			if diff := cmp.Diff(in, out, sameConfig); diff != "" {
				t.Errorf("Render then Parse (-rendered +parsed):\n%s\n%s", diff, y)
			}
			again, err := Render(out)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(y), string(again)); diff != "" {
				t.Errorf("rendering the parsed config changed the bytes (-first +second):\n%s", diff)
			}
		})
	}
}

// What the controller renders is a config the exporter accepts.
func TestRenderedConfigLoads(t *testing.T) {
	y, err := Render(full())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Load(y); err != nil {
		t.Errorf("Load of a rendered config: %v\n%s", err, y)
	}
}

// A blank driver config is no config: JSON has no blank value, and the exporter would read
// an empty one as null.
func TestRenderBlankDriverConfig(t *testing.T) {
	c := full()
	c.Export = map[string]Driver{"serial": {Type: "a.B", Config: json.RawMessage(" \n\t")}}
	y, err := Render(c)
	if err != nil {
		t.Fatal(err)
	}
	if want := "export:\n  serial:\n    type: a.B\n"; !strings.Contains(string(y), want) {
		t.Errorf("rendered\n%s\nwant it to hold\n%s", y, want)
	}
}

func TestRenderInvalidDriverConfig(t *testing.T) {
	c := full()
	c.Export = map[string]Driver{"serial": {Type: "a.B", Config: json.RawMessage("{")}}
	if y, err := Render(c); err == nil {
		t.Errorf("Render of a driver config that is not JSON = %s, want an error", y)
	}
}

// Check judges an entry built in code by its non-empty values, as if parsed from a file
// holding only those keys.
func TestCheckBuiltDriver(t *testing.T) {
	for _, tc := range []struct {
		d    Driver
		want string
	}{
		{Driver{Type: "a.B"}, ""},
		{Driver{Type: "a.B", Config: json.RawMessage(`{"x": 1}`)}, ""},
		{Driver{Ref: "a.b"}, ""},
		{Driver{Ref: "a.b", Type: "a.B"}, `export["d"]: has ref and type: want type and config, or ref alone`},
		{Driver{Ref: "a.b", Config: json.RawMessage(`{}`)}, `export["d"]: has ref and config: want type and config, or ref alone`},
		{Driver{}, `export["d"]: has no type (and no ref)`},
		{Driver{Config: json.RawMessage(`{}`)}, `export["d"]: has no type (and no ref)`},
	} {
		c := full()
		c.Export = map[string]Driver{"d": tc.d}
		err := c.Check()
		if got := fmtErr(err); got != tc.want {
			t.Errorf("Check of %+v = %q, want %q", tc.d, got, tc.want)
		}
	}
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// FuzzParse: Parse never panics, and whatever it accepts renders, and parses back to the same
// values and the same bytes.
func FuzzParse(f *testing.F) {
	f.Add([]byte(good))
	f.Add([]byte("export:\n  a: {}\n  b: {ref: x, type: ''}\nhooks: null\n"))
	f.Add([]byte(good + goodHooks))
	f.Add([]byte("hooks: {afterLease: {script: x, timeout: 1.0, bogus: 1}, beforeLease: null, x: 1}\n"))
	f.Add([]byte(`{"apiVersion": 1}`))
	f.Add([]byte("export: {q: {config: {n: 1.0, big: 12345678901234567890, s: [a, ~]}}}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			return
		}
		_ = c.Check()
		y, err := Render(c)
		if err != nil {
			t.Fatalf("Render of a parsed config: %v", err)
		}
		back, err := Parse(y)
		if err != nil {
			t.Fatalf("Parse of a rendered config: %v\n%s", err, y)
		}
		if diff := cmp.Diff(c, back, sameConfig); diff != "" {
			t.Fatalf("Parse, Render, Parse changed the config (-first +second):\n%s\n%s", diff, y)
		}
		again, err := Render(back)
		if err != nil {
			t.Fatal(err)
		}
		if string(again) != string(y) {
			t.Fatalf("rendering twice differs:\n%s\n---\n%s", y, again)
		}
	})
}
