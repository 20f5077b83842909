package baremetal

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

func newPublicKey(t *testing.T) ssh.PublicKey {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestKnownHostsCheck(t *testing.T) {
	k1, k2, k3, k4 := newPublicKey(t), newPublicKey(t), newPublicKey(t), newPublicKey(t)
	doc := strings.Join([]string{
		"# a comment",
		knownhosts.Line([]string{"lab1.example", "10.0.0.1"}, k1),
		knownhosts.Line([]string{"[10.0.0.2]:2222"}, k2),
		// Hashed, as `ssh-keygen -H` writes.
		knownhosts.Line([]string{knownhosts.HashHostname("hashed.example")}, k3),
		"*.wild.example,!bad.wild.example " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k4))),
		"@revoked * " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k2))),
		"",
	}, "\n")
	db, err := parseKnownHosts([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		addr string
		key  ssh.PublicKey
		want HostKeyProblem // "" for accepted
	}{
		{"lab1.example:22", k1, ""},
		{"LAB1.example:22", k1, ""},
		{"10.0.0.1:22", k1, ""},
		{"10.0.0.1:22", k3, HostKeyMismatch},
		{"10.0.0.1:2200", k1, HostKeyUnknown}, // another port is another host to OpenSSH
		{"10.0.0.2:2222", k2, HostKeyRevoked},
		{"hashed.example:22", k3, ""},
		{"other.example:22", k3, HostKeyUnknown},
		{"a.wild.example:22", k4, ""},
		{"bad.wild.example:22", k4, HostKeyUnknown},
	} {
		err := db.check("h", tc.addr, tc.key)
		var he *HostKeyError
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: unexpected %v", tc.addr, err)
		case tc.want != "" && (!errors.As(err, &he) || he.Problem != tc.want):
			t.Errorf("%s: err = %v, want %s", tc.addr, err, tc.want)
		case tc.want == HostKeyMismatch && (len(he.Want) != 1 || he.Want[0] != ssh.FingerprintSHA256(k1) || !strings.Contains(err.Error(), `lab host "h"`)):
			t.Errorf("%s: mismatch error %v should name the host and the known key", tc.addr, err)
		}
	}
	if got := db.algorithms("10.0.0.1:22"); len(got) != 1 || got[0] != ssh.KeyAlgoED25519 {
		t.Errorf("algorithms = %v", got)
	}
}

func TestKnownHostsParseErrors(t *testing.T) {
	for name, doc := range map[string]string{
		"empty":          "# nothing\n\n",
		"garbage":        "lab1 ssh-ed25519 !!!notbase64\n",
		"cert-authority": "@cert-authority * " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(newPublicKey(t)))) + "\n",
	} {
		if _, err := parseKnownHosts([]byte(doc)); err == nil {
			t.Errorf("%s: parsed without error", name)
		}
	}
}

func TestWildcard(t *testing.T) {
	for _, tc := range []struct {
		p, s string
		want bool
	}{
		{"*", "anything", true}, {"a*c", "abbbc", true}, {"a*c", "abd", false}, {"?b", "ab", true},
		{"?b", "b", false}, {"*.x", ".x", true}, {"[h]:22", "[h]:22", true}, {"a**", "a", true},
	} {
		if got := wildcard(tc.p, tc.s); got != tc.want {
			t.Errorf("wildcard(%q, %q) = %v", tc.p, tc.s, got)
		}
	}
}

func TestParseCredentialsErrors(t *testing.T) {
	for name, data := range map[string]map[string][]byte{
		"no key":         {SecretKeyKnownHosts: []byte("x")},
		"no known_hosts": {SecretKeyPrivateKey: []byte("x")},
		"bad key":        {SecretKeyPrivateKey: []byte("not a key"), SecretKeyKnownHosts: []byte("x")},
	} {
		_, err := ParseCredentials(data)
		if err == nil {
			t.Errorf("%s: no error", name)
		} else if strings.Contains(err.Error(), "not a key\"") {
			t.Errorf("%s: error quotes key material: %v", name, err)
		}
	}
}
