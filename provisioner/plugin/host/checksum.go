package host

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"
)

// ParseSHA256Sums parses the output of `sha256sum exporterset-provisioner-*` ("<hex>  <file>"
// per line, "*" before the name in binary mode) into Options.Checksums, keyed by base name.
// Blank lines and lines starting with # are ignored.
func ParseSHA256Sums(data []byte) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		sum, name, ok := strings.Cut(line, " ")
		name = strings.TrimPrefix(strings.TrimSpace(name), "*")
		if !ok || name == "" {
			return nil, fmt.Errorf("line %d: want \"<sha256>  <file>\", got %q", n, line)
		}
		if _, err := decodeSum(sum); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		base := filepath.Base(name)
		if prev, dup := out[base]; dup && prev != strings.ToLower(sum) {
			return nil, fmt.Errorf("line %d: %s is listed twice with different sums", n, base)
		}
		out[base] = strings.ToLower(sum)
	}
	return out, sc.Err()
}

func decodeSum(s string) ([]byte, error) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != sha256.Size {
		return nil, fmt.Errorf("%q is not a hex SHA-256", s)
	}
	return b, nil
}
