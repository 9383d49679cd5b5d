package main

import (
	"fmt"
	"path"
	"strings"
)

// actionsDir is where KAI keeps one directory per scheduler action.
const actionsDir = "pkg/scheduler/actions/"

// document is the converted form of one KAI test file.
type document struct {
	source    string
	scenarios []scenario
}

// convertFile extracts the scenarios of one KAI test file.
func convertFile(l *loader, source string) (document, error) {
	sc, err := l.testFile(source)
	if err != nil {
		return document{}, fmt.Errorf("%s: %w", source, err)
	}
	return document{source: source, scenarios: extractScenarios(sc)}, nil
}

// actionOf is the action directory a test file is in, e.g. "reclaim".
func actionOf(source string) string {
	if rest := strings.TrimPrefix(source, actionsDir); rest != source {
		return strings.SplitN(rest, "/", 2)[0]
	}
	return path.Base(path.Dir(source))
}

// outputName is the JSON file name for a test file, e.g.
// pkg/scheduler/actions/reclaim/reclaimDepartments_test.go ->
// reclaim__reclaimDepartments.json.
func outputName(source string) string {
	return actionOf(source) + "__" + strings.TrimSuffix(path.Base(source), "_test.go") + ".json"
}

// toJSON lays the document out as the C++ replay test expects it.
func (d document) toJSON(commit string) value {
	scenarios := array{}
	for i, s := range d.scenarios {
		scenarios = append(scenarios, s.toJSON(i))
	}
	return object{
		{"kai_commit", jsonString(commit)},
		{"source", jsonString(d.source)},
		{"action", jsonString(actionOf(d.source))},
		{"scenarios", scenarios},
	}
}

func (s scenario) toJSON(index int) value {
	function := jsonNull
	if s.function != "" {
		function = jsonString(s.function)
	}
	untranslatable := array{}
	for _, text := range s.untranslatable {
		untranslatable = append(untranslatable, jsonString(text))
	}
	return object{
		{"index", scalar(fmt.Sprint(index))},
		{"line", scalar(fmt.Sprint(s.line))},
		{"function", function},
		{"name", s.name},
		{"topology", s.topology},
		{"metadata", s.metadata},
		{"untranslatable", untranslatable},
	}
}

// untranslatableCount is the number of scenarios with untranslatable expressions.
func (d document) untranslatableCount() int {
	n := 0
	for _, s := range d.scenarios {
		if len(s.untranslatable) > 0 {
			n++
		}
	}
	return n
}
