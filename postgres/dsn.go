package postgres

import (
	"net/url"
	"regexp"
	"strings"
)

// redacted replaces passwords in messages.
const redacted = "xxxxx"

// kvEscape is a backslash escape in a keyword/value DSN's value: pgx reads
// `\x` as x, in quoted values and unquoted ones.
var kvEscape = regexp.MustCompile(`(?s)\\(.)`)

var kvPassword = regexp.MustCompile(`password\s*=\s*('(?:[^'\\]|\\.)*'|(?:\\.|\S)*)`)

// RedactDSN returns dsn with its password, if any, replaced by "xxxxx", for
// messages and logs. It handles URL ("postgres://user:pw@host/db") and
// keyword/value ("host=h password=pw") forms, malformed ones included.
func RedactDSN(dsn string) string {
	if rest, ok := cutScheme(dsn); ok {
		scheme := dsn[:len(dsn)-len(rest)]
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			userinfo := rest[:at]
			if i := strings.Index(userinfo, ":"); i >= 0 {
				rest = userinfo[:i] + ":" + redacted + rest[at:]
			}
		}
		return kvPassword.ReplaceAllString(scheme+rest, "password="+redacted)
	}
	return kvPassword.ReplaceAllString(dsn, "password="+redacted)
}

// passwords returns what may be passwords in dsn, raw and unescaped.
func passwords(dsn string) []string {
	var out []string
	add := func(p string) {
		if p == "" {
			return
		}
		out = append(out, p)
		if u, err := url.PathUnescape(p); err == nil && u != p {
			out = append(out, u)
		}
		if strings.Contains(p, `\`) {
			out = append(out, kvEscape.ReplaceAllString(p, "$1"))
		}
	}
	if rest, ok := cutScheme(dsn); ok {
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			if i := strings.Index(rest[:at], ":"); i >= 0 {
				add(rest[i+1 : at])
			}
		}
		if _, query, ok := strings.Cut(rest, "?"); ok {
			// A query parameter's value ends at the next '&' (the
			// keyword/value pattern below runs to the next space).
			query, _, _ = strings.Cut(query, "#")
			for _, kv := range strings.Split(query, "&") {
				k, v, _ := strings.Cut(kv, "=")
				if k, err := url.QueryUnescape(k); err == nil && k == "password" {
					add(v)
				}
			}
		}
	}
	for _, m := range kvPassword.FindAllStringSubmatch(dsn, -1) {
		add(strings.TrimSuffix(strings.TrimPrefix(m[1], "'"), "'"))
	}
	return out
}

// scrub removes the passwords of dsn from msg. It returns ok false when it
// cannot do so safely (a password too short to replace without mangling the
// message appears in it).
func scrub(msg, dsn string) (string, bool) {
	msg = RedactDSN(msg)
	for _, p := range passwords(dsn) {
		if !strings.Contains(msg, p) {
			continue
		}
		if len(p) < 4 {
			return "", false
		}
		msg = strings.ReplaceAll(msg, p, redacted)
	}
	return msg, true
}

func cutScheme(dsn string) (string, bool) {
	for _, s := range []string{"postgres://", "postgresql://"} {
		if strings.HasPrefix(dsn, s) {
			return dsn[len(s):], true
		}
	}
	return "", false
}
