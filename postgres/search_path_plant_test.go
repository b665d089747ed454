package postgres_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// sqlNames are the names the package's SQL uses, as its text spells them:
// functions (a name followed by '('), operators, relations (after FROM or
// JOIN) and words that may name a type.
type sqlNames struct {
	funcs, ops, rels, words []string
}

var (
	sqlWord     = regexp.MustCompile(`\b(SELECT|INSERT|UPDATE|DELETE|CREATE|ALTER|FROM|WHERE|CASE|LISTEN)\b`)
	sqlString   = regexp.MustCompile(`'(?:[^']|'')*'`)
	sqlQuoted   = regexp.MustCompile(`"[^"]*"`)
	sqlParam    = regexp.MustCompile(`\$\d+`)
	sqlOpSyntax = regexp.MustCompile(`(?i)OPERATOR\(\s*(?:pg_catalog\s*\.\s*)?([^)\s]+)\s*\)`)
	sqlFunc     = regexp.MustCompile(`(?:pg_catalog\.)?([A-Za-z_]\w*)\s*\(`)
	sqlOp       = regexp.MustCompile("[-+*/<>=~!@#%^&|`?]+")
	sqlRel      = regexp.MustCompile(`(?i)\b(?:FROM|JOIN)\s+(?:pg_catalog\.)?([A-Za-z_]\w*)`)
	sqlIdent    = regexp.MustCompile(`[A-Za-z_]\w*`)
)

// packageSQL returns the names used by the SQL in the string literals of
// the package's Go files (not its tests): every literal that reads as SQL,
// or as a piece of SQL concatenated into a statement.
func packageSQL(t *testing.T) sqlNames {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	funcs, ops, rels, words := map[string]bool{}, map[string]bool{"=": true}, map[string]bool{}, map[string]bool{}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil || !sqlWord.MatchString(s) {
				return true
			}
			s = sqlString.ReplaceAllString(s, " ")
			for _, m := range sqlOpSyntax.FindAllStringSubmatch(s, -1) {
				ops[m[1]] = true
			}
			s = sqlOpSyntax.ReplaceAllString(s, " ")
			for _, m := range sqlFunc.FindAllStringSubmatchIndex(s, -1) {
				if m[0] == 0 || !strings.ContainsAny(s[m[0]-1:m[0]], `.$"`) {
					funcs[strings.ToLower(s[m[2]:m[3]])] = true
				}
			}
			for _, m := range sqlRel.FindAllStringSubmatch(s, -1) {
				rels[strings.ToLower(m[1])] = true
			}
			s = sqlQuoted.ReplaceAllString(s, " ")
			for _, w := range sqlIdent.FindAllString(s, -1) {
				words[strings.ToLower(w)] = true
			}
			s = strings.ReplaceAll(sqlParam.ReplaceAllString(s, " "), "::", " ")
			for _, op := range sqlOp.FindAllString(s, -1) {
				ops[op] = true
			}
			return true
		})
	}
	// IS DISTINCT FROM, NULLIF, IN and = ANY look up "=" too (added above).
	keys := func(m map[string]bool) []string { return slices.Sorted(mapsKeys(m)) }
	return sqlNames{funcs: keys(funcs), ops: keys(ops), rels: keys(rels), words: keys(words)}
}

func mapsKeys(m map[string]bool) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// plantTypes are the argument types planted objects take where a catalog
// object takes them or a type that converts from them implicitly (as the
// server picks an exact match before a conversion): the types of tenure's
// columns and parameters and their neighbours. Row types of tenure's
// tables are added once the tables exist.
var plantTypes = []string{
	"text", "character varying", "name", "character", "smallint", "integer", "bigint",
	"double precision", "numeric", "boolean", "timestamp with time zone", "date",
	"interval", "jsonb", "oid",
}

// planter plants, as the hostile role, objects named as the catalog's that
// tenure's SQL uses, in the schemas the hostile role may create in. Every
// planted object, when run, records its name through spy (a table insert and
// a sequence bump, which no rollback undoes) and then does what the catalog
// object does, so a statement that runs one still succeeds.
type planter struct {
	conn    *pgx.Conn
	spy     string   // the schema of the spy function, table and sequence
	schemas []string // where to plant
	names   sqlNames
	n       int // objects planted
	failed  int // statements the server refused (signatures it cannot take)
}

// catalogSig is one pg_catalog function, aggregate or operator.
type catalogSig struct {
	name  string
	kind  string   // f: function, a: aggregate, o: operator
	args  []string // regtype names; "-" for an operator's missing left side
	ret   string
	setof bool
}

func (p *planter) catalog(t *testing.T) []catalogSig {
	t.Helper()
	ctx := ctxFor(t, time.Minute)
	rows, err := p.conn.Query(ctx, `
SELECT proname::text, prokind::text, proargtypes::regtype[]::text[], prorettype::regtype::text, proretset
FROM pg_catalog.pg_proc WHERE pronamespace = 'pg_catalog'::regnamespace AND proname = ANY($1) AND prokind IN ('f', 'a')
UNION ALL
SELECT oprname::text, 'o', ARRAY[oprleft::regtype::text, oprright::regtype::text], oprresult::regtype::text, false
FROM pg_catalog.pg_operator WHERE oprnamespace = 'pg_catalog'::regnamespace AND oprname = ANY($2)`, p.names.funcs, p.names.ops)
	if err != nil {
		t.Fatal(err)
	}
	var out []catalogSig
	var s catalogSig
	if _, err := pgx.ForEachRow(rows, []any{&s.name, &s.kind, &s.args, &s.ret, &s.setof}, func() error {
		out = append(out, catalogSig{s.name, s.kind, slices.Clone(s.args), s.ret, s.setof})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// implicitCasts maps a type to the types that convert to it implicitly.
func (p *planter) implicitCasts(t *testing.T) map[string][]string {
	t.Helper()
	rows, err := p.conn.Query(ctxFor(t, time.Minute), `SELECT castsource::regtype::text, casttarget::regtype::text
FROM pg_catalog.pg_cast WHERE castcontext = 'i'`)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	var from, to string
	if _, err := pgx.ForEachRow(rows, []any{&from, &to}, func() error {
		out[to] = append(out[to], from)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

var polymorphic = map[string]bool{"anyelement": true, "anynonarray": true, "anycompatible": true,
	"anycompatiblenonarray": true, "anyarray": true, "anycompatiblearray": true, `"any"`: true}

// concrete returns typ with the polymorphic type bound to elem.
func concrete(typ, elem string) string {
	switch typ {
	case "anyarray", "anycompatiblearray":
		return elem + "[]"
	}
	if polymorphic[typ] {
		return elem
	}
	return typ
}

// variants lists the argument types a planted copy of sig takes: for each
// polymorphic binding (each of types), each position takes the catalog's
// type, or one of types that converts to it implicitly, or text (an
// unknown literal or parameter prefers text).
func variants(sig catalogSig, types []string, casts map[string][]string) [][]string {
	var out [][]string
	elems := []string{""}
	if slices.ContainsFunc(sig.args, func(a string) bool { return polymorphic[a] }) {
		elems = types
	}
	for _, elem := range elems {
		cands := make([][]string, len(sig.args))
		for i, a := range sig.args {
			switch {
			case a == "-":
				cands[i] = []string{"-"}
			case polymorphic[a]:
				cands[i] = []string{concrete(a, elem)}
			default:
				for _, ty := range types {
					if ty == a || ty == "text" || slices.Contains(casts[a], ty) {
						cands[i] = append(cands[i], ty)
					}
				}
			}
			if len(cands[i]) == 0 {
				cands = nil
				break
			}
		}
		if cands == nil && len(sig.args) > 0 {
			continue
		}
		combos := [][]string{{}}
		for _, c := range cands {
			var next [][]string
			for _, prefix := range combos {
				for _, ty := range c {
					next = append(next, append(slices.Clone(prefix), ty))
				}
			}
			combos = next
		}
		for _, args := range combos {
			ret := sig.ret
			if polymorphic[ret] {
				ret = concrete(ret, elem)
			}
			out = append(out, append([]string{ret}, args...))
		}
	}
	return out
}

// plant creates the planted functions, aggregates and operators whose
// argument types are drawn from types, in every schema of p.
func (p *planter) plant(t *testing.T, types []string) {
	t.Helper()
	casts := p.implicitCasts(t)
	var stmts []string
	seen := map[string]bool{}
	for _, sig := range p.catalog(t) {
		if strings.HasPrefix(sig.ret, "internal") || sig.ret == "record" || sig.ret == "trigger" {
			continue
		}
		for _, v := range variants(sig, types, casts) {
			ret, args := v[0], v[1:]
			id := sig.kind + sig.name + "(" + strings.Join(args, ",") + ")"
			if seen[id] || polymorphic[ret] || (sig.kind == "a" && (len(args) != 1 || (sig.name != "max" && sig.name != "min"))) {
				continue
			}
			seen[id] = true
			for _, schema := range p.schemas {
				stmts = append(stmts, p.object(schema, sig, args, ret)...)
			}
		}
	}
	p.exec(t, stmts)
}

// object returns the statements that plant one copy of sig in schema: a
// function (for an aggregate, its state function; for an operator, the
// function it calls) that records its call, then does what the catalog's
// does.
func (p *planter) object(schema string, sig catalogSig, args []string, ret string) []string {
	p.n++
	what := fmt.Sprintf("%s.%s(%s)", schema, sig.name, strings.Join(args, ", "))
	var params, fwd []string
	for i, a := range args {
		if a == "-" {
			continue
		}
		params = append(params, a)
		if c := sig.args[i]; polymorphic[c] {
			fwd = append(fwd, fmt.Sprintf("$%d", len(params)))
		} else {
			fwd = append(fwd, fmt.Sprintf("$%d::%s", len(params), c))
		}
	}
	name := schema + "." + pgx.Identifier{sig.name}.Sanitize()
	fn := fmt.Sprintf("%s.tenure_planted_%d", schema, p.n)
	call := "pg_catalog." + pgx.Identifier{sig.name}.Sanitize() + "(" + strings.Join(fwd, ", ") + ")"
	var body string
	switch {
	case sig.kind == "o" && len(fwd) == 2:
		body = fmt.Sprintf("RETURN %s OPERATOR(pg_catalog.%s) %s;", fwd[0], sig.name, fwd[1])
	case sig.kind == "o":
		body = fmt.Sprintf("RETURN OPERATOR(pg_catalog.%s) %s;", sig.name, fwd[0])
	case sig.kind == "a": // the state function of max or min
		params = []string{ret, args[0]}
		op := map[string]string{"max": ">", "min": "<"}[sig.name]
		body = fmt.Sprintf("RETURN CASE WHEN $1 IS NULL OR $2 OPERATOR(pg_catalog.%s) $1 THEN $2 ELSE $1 END;", op)
	case ret == "void":
		fn, body = name, "PERFORM "+call+"; RETURN;"
	case sig.setof:
		fn, body, ret = name, "RETURN QUERY SELECT "+call+";", "SETOF "+ret
	default:
		fn, body = name, "RETURN "+call+";"
	}
	out := []string{fmt.Sprintf("CREATE FUNCTION %s(%s) RETURNS %s LANGUAGE plpgsql AS $planted$ BEGIN PERFORM %s.spy(%s); %s END $planted$",
		fn, strings.Join(params, ", "), ret, p.spy, quoteLiteral(what), body)}
	switch sig.kind {
	case "a":
		out = append(out, fmt.Sprintf("CREATE AGGREGATE %s(%s) (SFUNC = %s, STYPE = %s)", name, args[0], fn, ret))
	case "o":
		sides := fmt.Sprintf("RIGHTARG = %s", args[len(args)-1])
		if args[0] != "-" {
			sides = fmt.Sprintf("LEFTARG = %s, %s", args[0], sides)
		}
		out = append(out, fmt.Sprintf("CREATE OPERATOR %s.%s (%s, FUNCTION = %s)", schema, sig.name, sides, fn))
	}
	return out
}

// plantRelationsAndTypes plants a view named as each catalog relation the
// SQL reads and a domain named as each catalog type a word of the SQL may
// name; reading the view, or converting a value to the domain, calls spy.
// It runs last: a domain named text would be found by later planting.
func (p *planter) plantRelationsAndTypes(t *testing.T) {
	t.Helper()
	var rels, types []string
	ctx := ctxFor(t, time.Minute)
	if err := p.conn.QueryRow(ctx, `SELECT
  ARRAY(SELECT relname::text FROM pg_catalog.pg_class WHERE relnamespace = 'pg_catalog'::regnamespace AND relname = ANY($1)),
  ARRAY(SELECT typname::text FROM pg_catalog.pg_type WHERE typnamespace = 'pg_catalog'::regnamespace AND typtype = 'b'
        AND typcategory <> 'A' AND typname = ANY($2))`, p.names.rels, p.names.words).Scan(&rels, &types); err != nil {
		t.Fatal(err)
	}
	var stmts []string
	for _, schema := range p.schemas {
		for _, r := range rels {
			stmts = append(stmts, fmt.Sprintf("CREATE VIEW %s.%s AS SELECT * FROM pg_catalog.%s WHERE %s.spy(%s)",
				schema, r, r, p.spy, quoteLiteral(schema+"."+r+" (view)")))
		}
		for _, ty := range types {
			stmts = append(stmts, fmt.Sprintf("CREATE DOMAIN %s.%s AS pg_catalog.%s CHECK (%s.spy(%s))",
				schema, pgx.Identifier{ty}.Sanitize(), pgx.Identifier{ty}.Sanitize(), p.spy, quoteLiteral(schema+"."+ty+" (domain)")))
		}
	}
	p.exec(t, stmts)
}

// exec runs stmts on the server in one call, each in a subtransaction of its
// own: a signature the server refuses is counted and skipped.
func (p *planter) exec(t *testing.T, stmts []string) {
	t.Helper()
	var failed int
	if err := p.conn.QueryRow(ctxFor(t, 5*time.Minute), `SELECT `+p.spy+`.run_all($1)`, stmts).Scan(&failed); err != nil {
		t.Fatal(err)
	}
	p.failed += failed
}

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
