module fracpack.dev/kai_conformance/generator

go 1.19
