package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// defaultModulePath is KAI's Go module path, used when the checkout has no go.mod.
const defaultModulePath = "github.com/kai-scheduler/KAI-scheduler"

// loader parses KAI packages from a checkout on demand. It needs no type
// checker and no dependencies: constants are evaluated from their syntax.
type loader struct {
	root   string // KAI checkout root
	module string // KAI module path; imports under it map to root
	fset   *token.FileSet
	pkgs   map[pkgKey]*pkgInfo
	// consts indexes every constant declaration (package level or local to a
	// function) by the identifier that declares it.
	consts map[*ast.Ident]*constDecl
}

type pkgKey struct {
	dir       string
	name      string
	withTests bool
}

// pkgInfo holds the package-level declarations the converter needs.
type pkgInfo struct {
	path       string                // import path
	name       string                // package clause name
	files      map[string]*fileScope // by file path
	consts     map[string]*constDecl // package-level constants
	types      map[string]typeRef    // package-level type declarations
	ptrHelpers map[string]bool       // functions of the form func F(x T) *T { return &x }
	funcs      map[string]funcRef    // package-level functions (not methods)
}

// funcRef is a function declaration together with the file it is written in.
type funcRef struct {
	decl  *ast.FuncDecl
	scope *fileScope
}

// fileScope is one parsed file and what its identifiers can refer to.
type fileScope struct {
	loader  *loader
	pkg     *pkgInfo
	file    *ast.File
	aliases map[string]string // resolved import names, filled lazily
}

// typeRef is a type expression together with the file it is written in.
type typeRef struct {
	expr  ast.Expr
	scope *fileScope
}

func newLoader(root string) *loader {
	return &loader{
		root:   root,
		module: modulePath(root),
		fset:   token.NewFileSet(),
		pkgs:   map[pkgKey]*pkgInfo{},
		consts: map[*ast.Ident]*constDecl{},
	}
}

// modulePath reads the module path from the checkout's go.mod, if present.
func modulePath(root string) string {
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return defaultModulePath
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest := strings.TrimPrefix(strings.TrimSpace(line), "module "); rest != line {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return defaultModulePath
}

// testFile loads the package that the given test file belongs to (including
// its other test files) and returns the file's scope.
func (l *loader) testFile(rel string) (*fileScope, error) {
	abs := filepath.Join(l.root, filepath.FromSlash(rel))
	head, err := parser.ParseFile(token.NewFileSet(), abs, nil, parser.PackageClauseOnly)
	if err != nil {
		return nil, err
	}
	pkg, err := l.load(filepath.Dir(abs), head.Name.Name, true)
	if err != nil {
		return nil, err
	}
	sc := pkg.files[abs]
	if sc == nil {
		return nil, fmt.Errorf("%s: not loaded with package %s", rel, pkg.name)
	}
	return sc, nil
}

// importedPackage loads the non-test files of a KAI package by import path.
// It returns nil for packages outside KAI or missing from the checkout.
func (l *loader) importedPackage(importPath string) *pkgInfo {
	if importPath != l.module && !strings.HasPrefix(importPath, l.module+"/") {
		return nil
	}
	dir := filepath.Join(l.root, filepath.FromSlash(strings.TrimPrefix(importPath, l.module)))
	files := goFiles(dir, false)
	if len(files) == 0 {
		return nil
	}
	// All non-test files of a buildable package share one name; take the first.
	head, err := parser.ParseFile(token.NewFileSet(), files[0], nil, parser.PackageClauseOnly)
	if err != nil {
		return nil
	}
	pkg, err := l.load(dir, head.Name.Name, false)
	if err != nil {
		return nil
	}
	return pkg
}

// load parses the files in dir whose package clause is name.
func (l *loader) load(dir, name string, withTests bool) (*pkgInfo, error) {
	key := pkgKey{dir, name, withTests}
	if pkg := l.pkgs[key]; pkg != nil {
		return pkg, nil
	}
	pkg := &pkgInfo{
		path:       l.importPath(dir),
		name:       name,
		files:      map[string]*fileScope{},
		consts:     map[string]*constDecl{},
		types:      map[string]typeRef{},
		ptrHelpers: map[string]bool{},
		funcs:      map[string]funcRef{},
	}
	l.pkgs[key] = pkg
	for _, file := range goFiles(dir, withTests) {
		f, err := parser.ParseFile(l.fset, file, nil, 0)
		if err != nil {
			return nil, err
		}
		if f.Name.Name != name {
			continue
		}
		sc := &fileScope{loader: l, pkg: pkg, file: f, aliases: map[string]string{}}
		pkg.files[file] = sc
		l.indexFile(sc)
	}
	return pkg, nil
}

// importPath maps a directory of the checkout back to its import path.
func (l *loader) importPath(dir string) string {
	rel, err := filepath.Rel(l.root, dir)
	if err != nil || rel == "." {
		return l.module
	}
	return l.module + "/" + filepath.ToSlash(rel)
}

// goFiles lists the .go files of dir in sorted order.
func goFiles(dir string, withTests bool) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var files []string
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") {
			continue
		}
		if !withTests && strings.HasSuffix(n, "_test.go") {
			continue
		}
		files = append(files, filepath.Join(dir, n))
	}
	sort.Strings(files)
	return files
}

// indexFile records the file's constants, type declarations and functions.
func (l *loader) indexFile(sc *fileScope) {
	// Every const group, including those declared inside function bodies.
	ast.Inspect(sc.file, func(n ast.Node) bool {
		if d, ok := n.(*ast.GenDecl); ok && d.Tok == token.CONST {
			l.indexConstGroup(sc, d)
		}
		return true
	})
	for _, decl := range sc.file.Decls {
		switch d := decl.(type) {
		case *ast.GenDecl:
			l.indexPackageLevel(sc, d)
		case *ast.FuncDecl:
			if d.Recv == nil {
				sc.pkg.funcs[d.Name.Name] = funcRef{d, sc}
			}
			if returnsAddressOfParam(d) {
				sc.pkg.ptrHelpers[d.Name.Name] = true
			}
		}
	}
}

// indexPackageLevel makes a top-level declaration's types and constants
// visible to the whole package.
func (l *loader) indexPackageLevel(sc *fileScope, d *ast.GenDecl) {
	for _, spec := range d.Specs {
		switch s := spec.(type) {
		case *ast.TypeSpec:
			sc.pkg.types[s.Name.Name] = typeRef{s.Type, sc}
		case *ast.ValueSpec:
			if d.Tok != token.CONST {
				continue
			}
			for _, name := range s.Names {
				sc.pkg.consts[name.Name] = l.consts[name]
			}
		}
	}
}

// returnsAddressOfParam reports whether fn is `func F(x T) *T { return &x }`, the
// shape of helpers such as test_utils.CreateFloat64Pointer.
func returnsAddressOfParam(fn *ast.FuncDecl) bool {
	params := fn.Type.Params.List
	if fn.Recv != nil || fn.Body == nil || len(params) != 1 || len(params[0].Names) != 1 ||
		len(fn.Body.List) != 1 {
		return false
	}
	ret, ok := fn.Body.List[0].(*ast.ReturnStmt)
	if !ok || len(ret.Results) != 1 {
		return false
	}
	addr, ok := ret.Results[0].(*ast.UnaryExpr)
	if !ok || addr.Op != token.AND {
		return false
	}
	id, ok := addr.X.(*ast.Ident)
	return ok && id.Name == params[0].Names[0].Name
}

// importPathOf returns the import path that name refers to in this file, or "".
func (sc *fileScope) importPathOf(name string) string {
	if p, ok := sc.aliases[name]; ok {
		return p
	}
	found := ""
	for _, imp := range sc.file.Imports {
		p, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			continue
		}
		if sc.importName(imp, p) == name {
			found = p
			break
		}
	}
	sc.aliases[name] = found
	return found
}

// importName is the name an import is referred to by in the file.
func (sc *fileScope) importName(imp *ast.ImportSpec, importPath string) string {
	if imp.Name != nil {
		return imp.Name.Name
	}
	if pkg := sc.loader.importedPackage(importPath); pkg != nil {
		return pkg.name
	}
	return guessPackageName(importPath)
}

// dotImports returns the KAI packages imported with `import . "path"`.
func (sc *fileScope) dotImports() []*pkgInfo {
	var pkgs []*pkgInfo
	for _, imp := range sc.file.Imports {
		if imp.Name == nil || imp.Name.Name != "." {
			continue
		}
		p, _ := strconv.Unquote(imp.Path.Value)
		if pkg := sc.loader.importedPackage(p); pkg != nil {
			pkgs = append(pkgs, pkg)
		}
	}
	return pkgs
}

// guessPackageName derives the name of an import outside KAI from its path:
// the last element without a gopkg.in style suffix ("gock.v1" -> "gock").
func guessPackageName(importPath string) string {
	last := path.Base(importPath)
	if i := strings.Index(last, ".v"); i > 0 {
		last = last[:i]
	}
	return strings.ReplaceAll(last, "-", "_")
}
