package baremetal

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// knownHost is one usable line of a known_hosts file.
type knownHost struct {
	// patterns are the line's host patterns: plain or wildcard ("*", "?") names, "[host]:port",
	// hashed "|1|salt|hash", each possibly negated with "!".
	patterns []string
	key      ssh.PublicKey
	// revoked is the @revoked marker: this key must never be accepted.
	revoked bool
}

// knownHosts is a parsed known_hosts document. It is parsed here from the Secret's bytes with
// ssh.ParseKnownHosts rather than with knownhosts.New, because that only reads files and the
// key material should not be written to disk just to be read back.
type knownHosts []knownHost

// parseKnownHosts parses OpenSSH known_hosts content. @cert-authority lines are refused:
// host certificates are not supported yet, and silently ignoring the line would turn an
// intended trust into an "unknown host key" error that is hard to explain.
func parseKnownHosts(data []byte) (knownHosts, error) {
	var db knownHosts
	rest := data
	for entry := 1; ; entry++ {
		marker, hosts, key, _, r, err := ssh.ParseKnownHosts(rest)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: entry %d: %w", SecretKeyKnownHosts, entry, err)
		}
		rest = r
		switch marker {
		case "", "revoked":
		default:
			return nil, fmt.Errorf("%s: entry %d: marker @%s is not supported", SecretKeyKnownHosts, entry, marker)
		}
		db = append(db, knownHost{patterns: hosts, key: key, revoked: marker == "revoked"})
	}
	if len(db) == 0 {
		return nil, fmt.Errorf("%s holds no host key", SecretKeyKnownHosts)
	}
	return db, nil
}

// keysFor returns the trusted keys and the revoked keys listed for address (host:port).
func (db knownHosts) keysFor(address string) (trusted, revoked []ssh.PublicKey) {
	name := knownhosts.Normalize(address)
	for _, kh := range db {
		if !matchLine(kh.patterns, name) {
			continue
		}
		if kh.revoked {
			revoked = append(revoked, kh.key)
		} else {
			trusted = append(trusted, kh.key)
		}
	}
	return trusted, revoked
}

// algorithms lists the host key algorithms to offer for address: only those of the keys we
// know for it. Without this the server may present a key type we have no line for (an ECDSA
// key when known_hosts has its Ed25519 one) and a good host would look like a mismatch.
func (db knownHosts) algorithms(address string) []string {
	trusted, _ := db.keysFor(address)
	var algos []string
	seen := map[string]bool{}
	add := func(a string) {
		if !seen[a] {
			seen[a] = true
			algos = append(algos, a)
		}
	}
	for _, k := range trusted {
		if k.Type() == ssh.KeyAlgoRSA {
			// An RSA key signs with SHA-2 on any current server; ssh-rsa (SHA-1) is last.
			add(ssh.KeyAlgoRSASHA512)
			add(ssh.KeyAlgoRSASHA256)
		}
		add(k.Type())
	}
	return algos
}

// check verifies key for address and returns nil or a *HostKeyError for hostName.
func (db knownHosts) check(hostName, address string, key ssh.PublicKey) error {
	trusted, revoked := db.keysFor(address)
	got := ssh.FingerprintSHA256(key)
	for _, k := range revoked {
		if bytes.Equal(k.Marshal(), key.Marshal()) {
			return &HostKeyError{Host: hostName, Address: address, Problem: HostKeyRevoked, Got: got}
		}
	}
	if len(trusted) == 0 {
		return &HostKeyError{Host: hostName, Address: address, Problem: HostKeyUnknown, Got: got}
	}
	var want []string
	for _, k := range trusted {
		if bytes.Equal(k.Marshal(), key.Marshal()) {
			return nil
		}
		want = append(want, ssh.FingerprintSHA256(k))
	}
	return &HostKeyError{Host: hostName, Address: address, Problem: HostKeyMismatch, Got: got, Want: want}
}

// matchLine applies OpenSSH's rule to one line's patterns: some pattern matches name and no
// negated pattern does.
func matchLine(patterns []string, name string) bool {
	matched := false
	for _, p := range patterns {
		negated := strings.HasPrefix(p, "!")
		p = strings.TrimPrefix(p, "!")
		if !matchPattern(p, name) {
			continue
		}
		if negated {
			return false
		}
		matched = true
	}
	return matched
}

// matchPattern matches one pattern: hashed entries by HMAC-SHA1 of the name (the format
// `ssh-keygen -H` writes), others as case-insensitive wildcards.
func matchPattern(p, name string) bool {
	if strings.HasPrefix(p, "|1|") {
		parts := strings.Split(p[3:], "|")
		if len(parts) != 2 {
			return false
		}
		salt, err1 := base64.StdEncoding.DecodeString(parts[0])
		hash, err2 := base64.StdEncoding.DecodeString(parts[1])
		if err1 != nil || err2 != nil {
			return false
		}
		mac := hmac.New(sha1.New, salt)
		mac.Write([]byte(name))
		return hmac.Equal(mac.Sum(nil), hash)
	}
	return wildcard(strings.ToLower(p), strings.ToLower(name))
}

// wildcard matches s against p where '*' is any run of characters and '?' any one character.
func wildcard(p, s string) bool {
	// Iterative matcher with one backtrack point: linear enough for host names.
	pi, si, star, mark := 0, 0, -1, 0
	for si < len(s) {
		switch {
		case pi < len(p) && (p[pi] == '?' || p[pi] == s[si]):
			pi++
			si++
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, si
			pi++
		case star >= 0:
			pi = star + 1
			mark++
			si = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

// hostAddress joins a host's address and port the way known_hosts and net.Dial expect.
func hostAddress(h Host) string {
	port := h.Port
	if port == 0 {
		port = DefaultPort
	}
	return net.JoinHostPort(h.Address, strconv.Itoa(port))
}
