package main

import (
	"fmt"
	"slices"

	"github.com/arbordb/arbor/httpapi/idtoken"
)

// firebaseIssuer is the issuer of a Firebase project's ID tokens.
const firebaseIssuer = "https://securetoken.google.com/"

// tokenConfig is what the ID-token flags ask for.
func (c *serveConfig) tokenConfig() (idtoken.Config, error) {
	tc := idtoken.Config{
		KeyFiles:    slices.Clone(c.JWTPublicKeys),
		Audiences:   slices.Clone(c.JWTAudiences),
		Issuers:     slices.Clone(c.JWTIssuers),
		MaxLifetime: c.MaxTokenLifetime,
	}
	for _, s := range c.JWTHS256Secrets {
		tc.HS256Secrets = append(tc.HS256Secrets, []byte(s))
	}
	if p := c.FirebaseProject; p != "" {
		tc.Audiences = append(tc.Audiences, p)
		tc.Issuers = append(tc.Issuers, firebaseIssuer+p)
	}
	return tc, nil
}

// tokenVerifier builds the ID-token verifier; nil when no flag asks for
// one, so that every token but an admin secret is refused.
func (c *serveConfig) tokenVerifier() (*idtoken.Verifier, error) {
	tc, err := c.tokenConfig()
	if err != nil {
		return nil, err
	}
	if len(tc.HS256Secrets) == 0 && len(tc.KeyFiles) == 0 {
		return nil, nil
	}
	v, err := idtoken.New(tc)
	if err != nil {
		return nil, fmt.Errorf("--jwt-public-key: %w", err)
	}
	return v, nil
}
