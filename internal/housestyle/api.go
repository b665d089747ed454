package housestyle

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/doc"
	"go/printer"
	"go/token"
	"path/filepath"
	"sort"
	"strings"
)

// APIDir is the directory, relative to the repository's root, that holds
// the list of exported names of every public package: one file per
// package (APIFile), one line per name, as Go keeps its api/ directory.
const APIDir = "api"

// APIFile is the name of the list of package dir's exported names in
// APIDir: "tenure.txt" for the root, "etcd.txt" for etcd,
// "partition-partitiontest.txt" for partition/partitiontest.
func APIFile(dir string) string {
	if dir == "." || dir == "" {
		return "tenure.txt"
	}
	return strings.ReplaceAll(filepath.ToSlash(dir), "/", "-") + ".txt"
}

// API returns the exported names of the package in dir, one line each,
// sorted: every constant, variable, function and type, every method of an
// exported type, every exported field of a struct and method of an
// interface, with their signatures as written in the source:
//
//	const MaxTTL
//	func Now() Instant
//	method (*Term) Key() string
//	type Grant struct
//	type Grant struct, Key string
//
// Changing a signature changes its line, as adding or removing a name does.
func API(dir string) ([]string, error) {
	p, err := parseDoc(dir)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	src := func(n ast.Node) string {
		var b bytes.Buffer
		if err := printer.Fprint(&b, fset, n); err != nil {
			return fmt.Sprintf("<%v>", err)
		}
		return strings.Join(strings.Fields(b.String()), " ")
	}
	var out []string
	values := func(vs []*doc.Value) {
		for _, v := range vs {
			for _, n := range v.Names {
				if ast.IsExported(n) {
					out = append(out, v.Decl.Tok.String()+" "+n)
				}
			}
		}
	}
	funcs := func(fs []*doc.Func) {
		for _, f := range fs {
			if !ast.IsExported(f.Name) {
				continue
			}
			line := "func " + f.Name
			if r := f.Decl.Recv; r != nil {
				line = "method (" + src(r.List[0].Type) + ") " + f.Name
			}
			out = append(out, line+signature(f.Decl.Type, src))
		}
	}
	values(p.Consts)
	values(p.Vars)
	funcs(p.Funcs)
	for _, t := range p.Types {
		values(t.Consts)
		values(t.Vars)
		funcs(t.Funcs)
		funcs(t.Methods)
		out = append(out, typeLines(t, src)...)
	}
	sort.Strings(out)
	return out, nil
}

// typeLines lists exported type t: "type T kind", and for a struct or an
// interface one line per exported field or method.
func typeLines(t *doc.Type, src func(ast.Node) string) []string {
	var spec *ast.TypeSpec
	for _, s := range t.Decl.Specs {
		if ts := s.(*ast.TypeSpec); ts.Name.Name == t.Name {
			spec = ts
		}
	}
	head := "type " + t.Name
	if spec.TypeParams != nil {
		head += src(spec.TypeParams)
	}
	if spec.Assign.IsValid() {
		head += " ="
	}
	var fields *ast.FieldList
	switch x := spec.Type.(type) {
	case *ast.StructType:
		head, fields = head+" struct", x.Fields
	case *ast.InterfaceType:
		head, fields = head+" interface", x.Methods
	default:
		head += " " + src(x)
	}
	out := []string{head}
	if fields == nil {
		return out
	}
	for _, f := range fields.List {
		if len(f.Names) == 0 {
			out = append(out, head+", embedded "+src(f.Type))
			continue
		}
		for _, n := range f.Names {
			if !ast.IsExported(n.Name) {
				continue
			}
			if ft, ok := f.Type.(*ast.FuncType); ok && fields == interfaceMethods(spec) {
				out = append(out, head+", "+n.Name+signature(ft, src))
				continue
			}
			out = append(out, head+", "+n.Name+" "+src(f.Type))
		}
	}
	return out
}

// interfaceMethods is spec's method list if spec declares an interface.
func interfaceMethods(spec *ast.TypeSpec) *ast.FieldList {
	if it, ok := spec.Type.(*ast.InterfaceType); ok {
		return it.Methods
	}
	return nil
}

// signature is ft's parameters and results by type alone, without their
// names (which callers do not see): "(string, int) error".
func signature(ft *ast.FuncType, src func(ast.Node) string) string {
	list := func(fl *ast.FieldList) []string {
		var out []string
		if fl == nil {
			return out
		}
		for _, f := range fl.List {
			for range max(len(f.Names), 1) {
				out = append(out, src(f.Type))
			}
		}
		return out
	}
	s := ""
	if ft.TypeParams != nil {
		s = "[" + strings.Join(list(ft.TypeParams), ", ") + "]"
	}
	s += "(" + strings.Join(list(ft.Params), ", ") + ")"
	switch res := list(ft.Results); len(res) {
	case 0:
	case 1:
		s += " " + res[0]
	default:
		s += " (" + strings.Join(res, ", ") + ")"
	}
	return s
}
