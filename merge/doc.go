// Package merge computes the effective configuration of an ExporterSet from
// its VirtualTargetClass: the deep merge of schemaless JSON parameters and the
// resolution of per-role container image overrides.
//
// # Parameters
//
// A VirtualTargetClass carries schemaless JSON parameters; an ExporterSet may
// carry its own, which are merged over the class's. The merge is a JSON merge
// patch as defined by RFC 7386, with the class parameters as the target and the
// ExporterSet parameters as the patch:
//
//   - Objects merge recursively, key by key. Keys of the class that the
//     ExporterSet does not mention are kept unchanged.
//   - Scalars (strings, numbers, booleans) and lists from the ExporterSet
//     replace the class value as a whole. Lists are never concatenated or
//     merged element by element, because list elements have no identity to
//     merge on.
//   - A non-object ExporterSet value replaces a class object; an ExporterSet
//     object over a non-object class value merges as if that value were {}.
//   - An explicit JSON null in the ExporterSet deletes the key from the
//     result. Deleting a key the class does not have is a no-op, and a null
//     nested inside an object the class does not have yields that object
//     without the key ({} + {"a":{"b":null}} = {"a":{}}), as RFC 7386 says.
//     A null in the class parameters is an ordinary value and is kept.
//
// Both sides must be JSON objects at the top level; anything else, or invalid
// JSON, or trailing data after the object, is rejected with an [*InputError]
// naming the offending side ([SideClass] or [SideExporterSet]). Empty or nil
// input on either side counts as {}, because an absent parameters field means
// "no parameters", not "invalid". A top-level null is rejected like any other
// non-object (Kubernetes already turns an explicit null RawExtension into an
// absent one before it reaches this package).
//
// Inputs are never mutated, and the result never shares a nested map or slice
// with either input, so callers may cache decoded class parameters and reuse
// them across reconciles.
//
// Numbers keep their exact value: decoding uses [encoding/json.Decoder.UseNumber],
// so each number stays the [encoding/json.Number] text it was written as and is
// re-emitted verbatim. 9007199254740993 does not become 9007199254740992,
// 1e400 does not overflow, and 0.10 and -0 are written back as 0.10 and -0.
// Without this, a value the user never touched could change on every
// reconcile and cause spurious pod restarts.
//
// The merged result is canonical, so it can be compared or hashed to detect
// changes: compact, object keys sorted (as encoding/json emits maps), and
// without HTML escaping of <, > and &.
//
// # Why not mergo for parameters
//
// [dario.cat/mergo] is deliberately not used on the untyped
// map[string]any parameters, because there it does not implement RFC 7386:
//
//   - It stores nested maps of the source into the destination by reference,
//     so a later change to the result silently changes the input (for example
//     a cached class) and vice versa.
//   - It mutates its destination in place, so merging into decoded class
//     parameters corrupts them for the next ExporterSet of the same class.
//   - With override, a null in the source is stored as a nil value instead of
//     deleting the key, so "remove this class default" cannot be expressed.
//   - The usual way to feed it, json.Unmarshal into interface{}, turns every
//     number into a float64, which loses integers above 2^53 and changes how
//     numbers are written.
//
// # Images
//
// mergo is used where it is safe: on the small typed [Image] struct, whose
// fields are plain strings, to fill a chosen image's empty pull policy from
// the provisioner default. See [ResolveImages] for the precedence rules.
package merge
