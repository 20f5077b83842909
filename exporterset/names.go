package exporterset

import (
	"crypto/sha256"
	"encoding/base32"
	"strconv"
	"strings"
)

// maxSetPrefix keeps instance names (and the "-config" Secret beside them) well inside the
// 63-character label limit that Pod hostnames derive from.
const maxSetPrefix = 40

// instanceName is the Exporter name of the set's seq-th created instance. Names are a pure
// function of the set's UID and a sequence number kept in status, so a reconcile working from
// a stale cache computes the name an earlier reconcile already created and gets AlreadyExists
// instead of creating a second instance; the UID keeps a recreated set from reusing names.
func instanceName(setName, setUID string, seq int64) string {
	sum := sha256.Sum256([]byte(setUID + "/" + strconv.FormatInt(seq, 10)))
	suffix := strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:]))[:6]
	prefix := setName
	if len(prefix) > maxSetPrefix {
		prefix = strings.TrimRight(prefix[:maxSetPrefix], "-.")
	}
	return prefix + "-" + suffix
}

// ConfigSecretName is the name of an instance's exporter config Secret.
func ConfigSecretName(exporterName string) string { return exporterName + "-config" }
