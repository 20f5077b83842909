// Package fieldcheck holds the helpers a provisioner's Validate uses to check a JSON
// parameters document field by field: decoding with exact numbers, reading optional values
// and nested objects, reporting unknown keys with a did-you-mean, and quoting values in
// messages. Its errors are field.Errors, so they carry the path of the offending field
// (e.g. parameters.resources.memory) to the set's conditions and events.
//
// Data flow: raw JSON → DecodeObject → a map read with Present, Object and String, its keys
// checked with UnknownKeys (Suggest finds the near miss) → a field.ErrorList.
package fieldcheck
