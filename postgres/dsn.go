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

var kvPassword = regexp.MustCompile(`(?s)password\s*=\s*('(?:[^'\\]|\\.)*'|(?:\\.|\S)*)`)

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
		if before, query, ok := strings.Cut(rest, "?"); ok {
			// A query parameter's value runs to the next '&', spaces
			// included.
			kvs := strings.Split(query, "&")
			for i, kv := range kvs {
				if k, _, ok := strings.Cut(kv, "="); ok {
					if uk, err := url.QueryUnescape(k); err == nil && uk == "password" {
						kvs[i] = k + "=" + redacted
					}
				}
			}
			rest = before + "?" + strings.Join(kvs, "&")
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
		vs := []string{p}
		if u, err := url.PathUnescape(p); err == nil && u != p {
			vs = append(vs, u)
		}
		if strings.Contains(p, `\`) {
			vs = append(vs, kvEscape.ReplaceAllString(p, "$1"))
		}
		for _, v := range vs {
			out = append(out, v)
			// pgx reads a password without the spaces around it.
			if t := strings.TrimSpace(v); t != v && t != "" {
				out = append(out, t)
			}
		}
	}
	if rest, ok := cutScheme(dsn); ok {
		// pgx ends the user info at the first '@' before any '/', as
		// libpq does; net/url, at the last '@'. Both are candidates.
		ats := []int{strings.LastIndex(rest, "@")}
		if i := strings.IndexAny(rest, "@/"); i >= 0 && rest[i] == '@' {
			ats = append(ats, i)
		}
		for _, at := range ats {
			if at < 0 {
				continue
			}
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
