package idtoken

import (
	"encoding/json"
	"math"
	"slices"
	"time"
)

// maxUnixSeconds is 9999-12-31T23:59:59Z; later exp values are clamped so
// that absurd but valid numbers cannot overflow time.Time arithmetic.
const maxUnixSeconds = 253402300799

// decodeClaims parses the payload. Numbers stay float64, the type the
// rules language gives every number, so `auth.token` compares the way
// Firebase's does.
func decodeClaims(payload []byte) (map[string]any, error) {
	var claims map[string]any
	if err := json.Unmarshal(payload, &claims); err != nil {
		return nil, malformed("payload is not a JSON object: %v", err)
	}
	if claims == nil { // the payload was `null`
		return nil, malformed("payload is not a JSON object")
	}
	return claims, nil
}

// numericDate reads an optional NumericDate (RFC 7519 §2) claim.
func numericDate(claims map[string]any, name string) (float64, bool, error) {
	raw, ok := claims[name]
	if !ok {
		return 0, false, nil
	}
	f, ok := raw.(float64)
	if !ok {
		return 0, false, malformed("%s is not a number", name)
	}
	return f, true, nil
}

// checkTimes applies exp, nbf and iat with the leeway and the lifetime
// limit, and returns when the token expires. exp and iat are required: a
// token without exp would never expire, and one without iat could not be
// held to a lifetime, so either would outlive any revocation short of
// removing its key.
func (v *Verifier) checkTimes(claims map[string]any, now time.Time) (time.Time, error) {
	nowSec := float64(now.Unix()) + float64(now.Nanosecond())/1e9
	lw := v.leeway.Seconds()
	exp, hasExp, err := numericDate(claims, "exp")
	if err != nil {
		return time.Time{}, err
	}
	iat, hasIat, err := numericDate(claims, "iat")
	if err != nil {
		return time.Time{}, err
	}
	nbf, hasNbf, err := numericDate(claims, "nbf")
	if err != nil {
		return time.Time{}, err
	}
	switch {
	case !hasExp:
		return time.Time{}, malformed("no exp claim: the token would never expire")
	case !hasIat:
		return time.Time{}, malformed("no iat claim")
	case iat > nowSec+lw:
		return time.Time{}, malformed("iat %v is in the future (now %v)", iat, nowSec)
	case hasNbf && nbf > nowSec+lw:
		return time.Time{}, malformed("nbf %v is in the future (now %v)", nbf, nowSec)
	case exp-iat > v.maxLifetime.Seconds():
		return time.Time{}, malformed("lifetime exp - iat of %vs is over the %v allowed", exp-iat, v.maxLifetime)
	case exp+lw < nowSec:
		return time.Time{}, expired(exp, nowSec)
	}
	return unixTime(exp), nil
}

// unixTime converts a NumericDate, clamping it to years 1..9999.
func unixTime(sec float64) time.Time {
	sec = math.Max(-62135596800, math.Min(sec, maxUnixSeconds))
	whole, frac := math.Modf(sec)
	return time.Unix(int64(whole), int64(frac*1e9)).UTC()
}

// checkAudience and checkIssuer apply the configured lists; a token for
// another project or provider must not grant access here even though its
// signature is good, since one Google key set signs every project's tokens.
func (v *Verifier) checkAudience(claims map[string]any) error {
	if len(v.audiences) == 0 {
		return nil
	}
	switch aud := claims["aud"].(type) {
	case nil:
		return malformed("no aud claim")
	case string:
		if slices.Contains(v.audiences, aud) {
			return nil
		}
	case []any:
		for _, a := range aud {
			s, ok := a.(string)
			if !ok {
				return malformed("aud array holds a non-string")
			}
			if slices.Contains(v.audiences, s) {
				return nil
			}
		}
	default:
		return malformed("aud is neither a string nor an array")
	}
	return malformed("aud %v is not an accepted audience", claims["aud"])
}

func (v *Verifier) checkIssuer(claims map[string]any) error {
	if len(v.issuers) == 0 {
		return nil
	}
	iss, ok := claims["iss"].(string)
	if !ok {
		return malformed("no iss claim, or not a string")
	}
	if !slices.Contains(v.issuers, iss) {
		return malformed("iss %q is not an accepted issuer", iss)
	}
	return nil
}

// authVariable builds the rules' `auth` the way Firebase does. Legacy
// firebase-token-generator tokens (HS256 with a "d" object and no sub)
// expose "d" itself; every other token gets uid, provider and token.
func authVariable(claims map[string]any, alg string) (map[string]any, error) {
	if d, ok := claims["d"]; ok && alg == "HS256" && claims["sub"] == nil {
		data, ok := d.(map[string]any)
		if !ok {
			return nil, malformed("legacy token: d is not an object")
		}
		if _, ok := data["uid"].(string); !ok {
			return nil, malformed("legacy token: d.uid is missing or not a string")
		}
		// A copy, because claims holds data: adding "token" to data
		// itself would make the value contain itself.
		auth := make(map[string]any, len(data)+1)
		for k, val := range data {
			auth[k] = val
		}
		auth["token"] = claims
		return auth, nil
	}
	uid, err := subject(claims)
	if err != nil {
		return nil, err
	}
	provider := "custom"
	if fb, ok := claims["firebase"].(map[string]any); ok {
		if p, ok := fb["sign_in_provider"].(string); ok {
			provider = p
		}
	}
	return map[string]any{"uid": uid, "provider": provider, "token": claims}, nil
}

// subject finds the uid: sub, or user_id for tokens that only carry that.
// A present but unusable sub is an error rather than a reason to fall
// back, since sub is the claim the issuer vouches for.
func subject(claims map[string]any) (string, error) {
	name := "sub"
	raw, ok := claims[name]
	if !ok {
		name = "user_id"
		if raw, ok = claims[name]; !ok {
			return "", malformed("neither sub nor user_id claim")
		}
	}
	s, ok := raw.(string)
	if !ok || s == "" {
		return "", malformed("%s is not a non-empty string", name)
	}
	return s, nil
}
