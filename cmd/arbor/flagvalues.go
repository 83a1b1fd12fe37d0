package main

import "strings"

// stringList is a repeatable flag: each occurrence adds one value, so a
// value may itself contain commas (admin secrets may).
type stringList []string

// String joins the values for the flag package's help output.
func (l *stringList) String() string { return strings.Join(*l, ",") }

// Set appends one value.
func (l *stringList) Set(v string) error {
	*l = append(*l, v)
	return nil
}

// commaList is a flag holding a comma-separated list (peer addresses);
// repeating the flag adds to the list.
type commaList []string

// String joins the values for the flag package's help output.
func (l *commaList) String() string { return strings.Join(*l, ",") }

// Set appends the non-empty comma-separated items of v.
func (l *commaList) Set(v string) error {
	for _, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			*l = append(*l, item)
		}
	}
	return nil
}
