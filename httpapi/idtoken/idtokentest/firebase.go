// Package idtokentest makes ID tokens for tests and benchmarks: what
// Firebase Authentication would issue, signed with a test key, so that a
// node started with the key's public half and --firebase-project
// verifies them (SPEC §8).
package idtokentest

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"
)

// FirebaseRS256 returns an RS256 ID token for uid in project, issued five
// seconds before now and valid for an hour, with Firebase's claims
// (iss, aud, sub, user_id, auth_time, firebase.sign_in_provider).
func FirebaseRS256(key *rsa.PrivateKey, project, uid string, now time.Time) (string, error) {
	enc := base64.RawURLEncoding
	t := now.Unix()
	claims, err := json.Marshal(map[string]any{
		"iss": "https://securetoken.google.com/" + project, "aud": project, "sub": uid, "user_id": uid,
		"iat": t - 5, "exp": t - 5 + 3600, "auth_time": t - 5,
		"firebase": map[string]any{"sign_in_provider": "password", "identities": map[string]any{}},
	})
	if err != nil {
		return "", fmt.Errorf("claims: %w", err)
	}
	signed := enc.EncodeToString([]byte(`{"alg":"RS256","typ":"JWT"}`)) + "." + enc.EncodeToString(claims)
	sum := sha256.Sum256([]byte(signed))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
	if err != nil {
		return "", fmt.Errorf("sign: %w", err)
	}
	return signed + "." + enc.EncodeToString(sig), nil
}
