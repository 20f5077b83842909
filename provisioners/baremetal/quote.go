package baremetal

import (
	"errors"
	"strings"
)

// Quote returns s as one POSIX shell word: wrapped in single quotes, inside which the shell
// interprets nothing, with each embedded single quote replaced by close-quote, backslash,
// quote, open-quote (the only character single quotes cannot hold). It is the only way a
// value reaches a remote shell in this package: SSH carries a command as one string that the
// host's login shell parses, so argv must be re-quoted.
func Quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// errNUL is returned for an argument holding a NUL byte: C strings end there, so the remote
// program would see a different argument than the one given.
var errNUL = errors.New("an argument contains a NUL byte, which no argv can carry")

// QuoteArgv joins argv into one remote command string, each element quoted with Quote, so the
// remote shell runs exactly argv: no expansion, globbing, word splitting or command
// substitution. It refuses an empty argv and NUL bytes.
func QuoteArgv(argv []string) (string, error) {
	if len(argv) == 0 {
		return "", errors.New("empty command")
	}
	var b strings.Builder
	for i, a := range argv {
		if strings.IndexByte(a, 0) >= 0 {
			return "", errNUL
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(Quote(a))
	}
	return b.String(), nil
}
