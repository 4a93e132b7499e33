// Package storage holds a struct of the same name, package, fields and tags as the one
// kube-apiserver's storage decodes a list's continue token into, so that Go's decoder names
// it as kube-apiserver's does (storage.continueToken).
package storage

import "encoding/json"

type continueToken struct {
	APIVersion      string `json:"v"`
	ResourceVersion int64  `json:"rv"`
	StartKey        string `json:"start"`
}

// DecodeToken is encoding/json's error decoding data into the token struct, or nil.
func DecodeToken(data []byte) error {
	var token continueToken
	return json.Unmarshal(data, &token)
}
