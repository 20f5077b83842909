package exportercfg

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// PEMCertificateMarker opens a certificate in a PEM bundle. The CA is checked no further than
// holding one: test fixtures use certificates whose bodies are not real DER.
const PEMCertificateMarker = "-----BEGIN CERTIFICATE-----"

// Check reports the first thing that keeps an exporter with this config from trying to
// register, in a fixed order (type, metadata, endpoint, token, TLS, export, hooks), or nil. The
// message names the field and quotes the value, so that it can stand alone in a container's
// termination message. An empty export is allowed: upstream's exporter defaults it to no
// drivers and runs (a set without drivers is valid). Hooks are judged as upstream's exporter
// judges them, which is less than [Hooks.Check] refuses: see checkAsExporter.
func (c *Config) Check() error {
	switch {
	case c.APIVersion != APIVersion:
		return fmt.Errorf("apiVersion is %q, want %q", c.APIVersion, APIVersion)
	case c.Kind != Kind:
		return fmt.Errorf("kind is %q, want %q", c.Kind, Kind)
	case c.Metadata.Namespace == "":
		return fmt.Errorf("metadata.namespace is empty")
	case c.Metadata.Name == "":
		return fmt.Errorf("metadata.name is empty")
	}
	if err := checkEndpoint(c.Endpoint); err != nil {
		return err
	}
	if c.Token == "" {
		return fmt.Errorf("token is empty: the exporter cannot authenticate")
	}
	if err := c.TLS.Check(); err != nil {
		return err
	}
	for _, name := range c.DriverNames() {
		if err := c.Export[name].check(); err != nil {
			return fmt.Errorf("export[%q]: %w", name, err)
		}
	}
	return c.Hooks.checkAsExporter()
}

// checkEndpoint wants host:port with a port number.
func checkEndpoint(ep string) error {
	if ep == "" {
		return fmt.Errorf("endpoint is empty: no controller to connect to")
	}
	host, port, err := net.SplitHostPort(ep)
	if err != nil {
		return fmt.Errorf("endpoint %q is not host:port: %w", ep, err)
	}
	if host == "" {
		return fmt.Errorf("endpoint %q has no host", ep)
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
		return fmt.Errorf("endpoint %q: port %q is not a number from 1 to 65535", ep, port)
	}
	return nil
}

// Check wants a CA holding a PEM certificate unless verification is off. The simulator
// reports the same words when a running exporter's config changes under it.
func (t TLS) Check() error {
	if t.Insecure {
		return nil
	}
	ca, err := base64.StdEncoding.DecodeString(t.CA)
	switch {
	case err != nil:
		return fmt.Errorf("tls.ca is not base64: %w", err)
	case len(bytes.TrimSpace(ca)) == 0:
		return fmt.Errorf("tls.ca is empty and tls.insecure is false: no CA to verify the controller's certificate")
	case !bytes.Contains(ca, []byte(PEMCertificateMarker)):
		return fmt.Errorf("tls.ca holds no PEM certificate")
	}
	return nil
}

// check wants exactly {type[, config]} or {ref}.
func (d Driver) check() error {
	fields := d.keys()
	for _, f := range fields {
		if f != "type" && f != "config" && f != "ref" {
			return fmt.Errorf("unknown field %q (want type and config, or ref)", f)
		}
	}
	has := func(f string) bool {
		for _, x := range fields {
			if x == f {
				return true
			}
		}
		return false
	}
	switch {
	case has("ref") && (has("type") || has("config")):
		return fmt.Errorf("has ref and %s: want type and config, or ref alone", strings.Join(without(fields, "ref"), " and "))
	case has("ref") && d.Ref == "":
		return fmt.Errorf("ref is empty")
	case has("ref"):
		return nil
	case !has("type"):
		return fmt.Errorf("has no type (and no ref)")
	case d.Type == "":
		return fmt.Errorf("type is empty")
	}
	return nil
}

// keys are the entry's keys: as written when parsed, else its non-empty values'.
func (d Driver) keys() []string {
	if d.fields != nil {
		return d.fields
	}
	var out []string
	if len(bytes.TrimSpace(d.Config)) > 0 {
		out = append(out, "config")
	}
	if d.Ref != "" {
		out = append(out, "ref")
	}
	if d.Type != "" {
		out = append(out, "type")
	}
	return out
}

func without(list []string, drop string) []string {
	var out []string
	for _, s := range list {
		if s != drop {
			out = append(out, s)
		}
	}
	return out
}
