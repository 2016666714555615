package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/swarm"
	"github.com/continuo-dev/continuo/internal/workflow"
	"github.com/google/jsonschema-go/jsonschema"
)

// Tool arguments are plain structs. Their bounds live in struct tags, read
// once here both to validate every call and to publish the same bounds in
// the tool's input schema:
//
//	limit:"MIN,MAX"  strings: UTF-8 bytes; slices: items; integers: value
//	                 (published, except a string's minimum of 1 and an
//	                 integer's maximum of guardMax or more)
//	each:"MAX"       bytes per string item of a slice
//	enum:"NAME"      allowed values (strings and string items): the closed
//	                 set NAME of enumSets, in its order
//
// A field without omitempty in its json tag is required. An optional number
// whose absence must be told from 0 (a default applies) is a pointer. The
// tags of a nested struct (an object argument, or the items of an array of
// objects) are read the same way, and a nested field is named by its path
// ("evidence.ref", "tasks[3].prompt").

// enumSets are the closed sets an enum tag can name. Each comes from its one
// source, the root package's ordered list (or, for context materials, the
// workflow package's keys), so validation, error messages and the published
// schemas list the same values in the same order as the SQL CHECKs.
var enumSets = map[string][]string{
	"kind":          strs(continuo.Kinds()),
	"listkind":      strs(continuo.ListKinds()),
	"order":         strs(continuo.Orders()),
	"status":        strs(continuo.Statuses()),
	"priority":      strs(continuo.Priorities()),
	"mode":          strs(continuo.Modes()),
	"lifecycle":     strs(continuo.Lifecycles()),
	"goallifecycle": strs(continuo.GoalLifecycles()),
	"goalend":       {string(continuo.GoalCompleted), string(continuo.GoalCancelled)},
	"material":      {workflow.MaterialProjectInstructions, workflow.MaterialWorkflowGuide},
	"taskstate":     strs(continuo.TaskStates()),
	"contdecision":  {"no_effect", "applied"},
	"reportsource":  {string(continuo.LedgerHostExact), string(continuo.LedgerEstimate)},
	"decision":      strs(swarm.Decisions()),
	"disposition":   strs(swarm.Dispositions()),
	"effect":        {string(swarm.EffectNone), string(swarm.EffectMaybe)},
	"nextstate":     strs(swarm.NextStates()),
	"runtime":       {swarm.RuntimeManual, swarm.RuntimeProcess},
}

// checkEnum checks a value of a nested argument (which the tags of the
// top-level fields do not reach) against the closed set name.
func checkEnum(name, set, value string) error {
	return field{name: name, enum: enumSets[set]}.checkEnum(name, value)
}

func strs[T ~string](xs []T) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = string(x)
	}
	return out
}

// maxArgs bounds a whole tool call's arguments.
const maxArgs = 1 << 20

// decode parses raw arguments into a new In, strictly: unknown fields, wrong
// types, trailing data and out-of-bounds values are all invalid_input naming
// the field. It never panics, whatever the bytes.
func decode[In any](raw json.RawMessage) (*In, error) {
	in := new(In)
	if len(raw) > maxArgs {
		return nil, continuo.Errorf(continuo.CodeTooLarge, "arguments exceed %d bytes", maxArgs).With("limit", maxArgs)
	}
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		trimmed = []byte("{}")
	}
	if !utf8.Valid(trimmed) {
		return nil, continuo.Errorf(continuo.CodeInvalidInput, "arguments are not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	if err := dec.Decode(in); err != nil {
		if strings.HasPrefix(err.Error(), "json: unknown field ") {
			// The decoder names an unknown field without saying where it
			// is: find it, so that a nested one is named by its path.
			if err := exactNames(trimmed, reflect.TypeFor[In](), ""); err != nil {
				return nil, err
			}
		}
		return nil, decodeError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, continuo.Errorf(continuo.CodeInvalidInput, "arguments must be one JSON object")
	}
	if err := exactNames(trimmed, reflect.TypeFor[In](), ""); err != nil {
		return nil, err
	}
	if err := validate(reflect.ValueOf(in).Elem(), ""); err != nil {
		return nil, err
	}
	return in, nil
}

// exactNames refuses argument names, at any depth, that match no field of
// struct type t exactly: encoding/json would accept {"TEXT": …} for
// "text", but the schema we publish says names are exact and nothing else
// is allowed. A name is reported by its path ("policy.bogus",
// "steps[2].bogus"), prefix being the path of obj. What is not an object
// here was typed by the decoder, which says so.
func exactNames(obj []byte, t reflect.Type, prefix string) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(obj, &m); err != nil {
		return nil
	}
	fs := fieldsOf(t)
	for _, name := range slices.Sorted(maps.Keys(m)) {
		i := slices.IndexFunc(fs, func(f field) bool { return f.name == name })
		if i < 0 {
			return continuo.Invalid(prefix+name, "unknown argument")
		}
		ft := t.Field(fs[i].index).Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch {
		case ft.Kind() == reflect.Struct:
			if err := exactNames(m[name], ft, prefix+name+"."); err != nil {
				return err
			}
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
			var items []json.RawMessage
			_ = json.Unmarshal(m[name], &items)
			for j, item := range items {
				if err := exactNames(item, ft.Elem(), fmt.Sprintf("%s%s[%d].", prefix, name, j)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func decodeError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			return continuo.Errorf(continuo.CodeInvalidInput, "arguments must be a JSON object")
		}
		return continuo.Invalid(field, "must be %s", jsonKind(te.Type))
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		name = strings.Trim(name, `"`)
		return continuo.Invalid(name, "unknown argument")
	}
	return continuo.Errorf(continuo.CodeInvalidInput, "arguments are not valid JSON")
}

func jsonKind(t reflect.Type) string {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "an integer"
	case reflect.Slice:
		return "an array"
	}
	return "of type " + t.Kind().String()
}

// field describes one argument's bounds, parsed from its tags.
type field struct {
	name     string
	required bool
	min, max int64
	hasLimit bool
	each     int
	enum     []string
	index    int // of the struct field
}

// fieldCache holds each argument type's fields, parsed from its tags once:
// decoding runs on every tool call.
var fieldCache sync.Map // reflect.Type → []field

// fieldsOf returns the argument fields of struct type t.
func fieldsOf(t reflect.Type) []field {
	if fs, ok := fieldCache.Load(t); ok {
		return fs.([]field)
	}
	var fs []field
	for i := 0; i < t.NumField(); i++ {
		if f, ok := fieldOf(t.Field(i)); ok {
			f.index = i
			fs = append(fs, f)
		}
	}
	fieldCache.Store(t, fs)
	return fs
}

func fieldOf(sf reflect.StructField) (field, bool) {
	tag := sf.Tag.Get("json")
	name, opts, _ := strings.Cut(tag, ",")
	if name == "-" || !sf.IsExported() {
		return field{}, false
	}
	if name == "" {
		name = sf.Name
	}
	f := field{name: name, required: !strings.Contains(opts, "omitempty")}
	if l := sf.Tag.Get("limit"); l != "" {
		lo, hi, _ := strings.Cut(l, ",")
		f.min, _ = strconv.ParseInt(lo, 10, 64)
		f.max, _ = strconv.ParseInt(hi, 10, 64)
		f.hasLimit = true
	}
	if e := sf.Tag.Get("each"); e != "" {
		f.each, _ = strconv.Atoi(e)
	}
	if e := sf.Tag.Get("enum"); e != "" {
		set, ok := enumSets[e]
		if !ok {
			// A programming error: the schemas are built when the server
			// is, so this fails at start-up and in every test.
			panic(fmt.Sprintf("argument %s: enum:%q names no set of enumSets", name, e))
		}
		f.enum = set
	}
	return f, true
}

// CheckArgs checks a tool's arguments (a pointer to its *Args struct),
// filled by another front end (the dashboard's forms), against the tool's
// own rules: what a tool call with these arguments would be refused for
// is refused here with the same invalid_input.
func CheckArgs(in any) error { return validate(reflect.ValueOf(in).Elem(), "") }

// validate checks every argument field of struct value v against its
// tags, and the fields of nested structs (objects, items of arrays of
// objects) against theirs; prefix is v's path ("" at the top).
func validate(v reflect.Value, prefix string) error {
	for _, f := range fieldsOf(v.Type()) {
		fv := v.Field(f.index)
		if err := f.check(prefix+f.name, fv); err != nil {
			return err
		}
		if fv.Kind() == reflect.Pointer {
			if fv.IsNil() {
				continue
			}
			fv = fv.Elem()
		}
		switch {
		case nested(fv.Type()):
			if err := validate(fv, prefix+f.name+"."); err != nil {
				return err
			}
		case fv.Kind() == reflect.Slice && nested(fv.Type().Elem()):
			for i := 0; i < fv.Len(); i++ {
				if err := validate(fv.Index(i), fmt.Sprintf("%s%s[%d].", prefix, f.name, i)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// nested reports whether t is an object argument whose fields are
// arguments too: a struct, but not a JSON value kept as sent.
func nested(t reflect.Type) bool { return t.Kind() == reflect.Struct }

// check checks one field's value; name is its path.
func (f field) check(name string, v reflect.Value) error {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() { // absent, or null: the default applies
			if f.required {
				return continuo.Invalid(name, "is required")
			}
			return nil
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.String:
		s := v.String()
		if s == "" {
			if f.required {
				return continuo.Invalid(name, "is required")
			}
			return nil
		}
		if f.hasLimit && (int64(len(s)) < f.min || int64(len(s)) > f.max) {
			return continuo.Invalid(name, "must be %d..%d bytes, got %d", f.min, f.max, len(s)).With("limit", f.max)
		}
		return f.checkEnum(name, s)
	case reflect.Int, reflect.Int64:
		n := v.Int()
		if f.hasLimit && (n < f.min || n > f.max) {
			return continuo.Invalid(name, "must be %d..%d, got %d", f.min, f.max, n).With("limit", f.max)
		}
	case reflect.Slice:
		if v.Len() == 0 && !f.required {
			return nil // absent: an optional list
		}
		if f.hasLimit && (int64(v.Len()) < f.min || int64(v.Len()) > f.max) {
			return continuo.Invalid(name, "must have %d..%d items, got %d", f.min, f.max, v.Len()).With("limit", f.max)
		}
		for i := 0; i < v.Len(); i++ {
			e := v.Index(i)
			if e.Kind() != reflect.String {
				continue
			}
			item := fmt.Sprintf("%s[%d]", name, i)
			s := e.String()
			if s == "" || (f.each > 0 && len(s) > f.each) {
				return continuo.Invalid(item, "must be 1..%d bytes", f.each).With("limit", f.each)
			}
			if err := f.checkEnum(item, s); err != nil {
				return err
			}
		}
	}
	return nil
}

func (f field) checkEnum(name, s string) error {
	if len(f.enum) == 0 {
		return nil
	}
	for _, e := range f.enum {
		if s == e {
			return nil
		}
	}
	return continuo.Invalid(name, "must be one of %s", strings.Join(f.enum, ", "))
}

// inputSchema infers In's JSON Schema and adds the bounds from its tags, so
// clients see the limits the server enforces.
func inputSchema[In any]() *jsonschema.Schema {
	s, err := jsonschema.For[In](&jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[JSONValue](): jsonValueSchema}})
	if err != nil {
		panic(fmt.Sprintf("input schema of %T: %v", *new(In), err))
	}
	// An argument sent as null is taken as absent; nothing needs null.
	portable(s, false)
	withTags(s, reflect.TypeFor[In](), true, nil)
	return s
}

// withTags adds the bounds and closed sets of struct type t's tags to its
// schema s, and those of its nested structs to theirs: limits (bounds=true,
// inputs) and enums (both; a result's closed sets are enums too). Types in
// fixed have a schema of their own, shared by every tool: it is left as it
// is.
func withTags(s *jsonschema.Schema, t reflect.Type, bounds bool, fixed map[reflect.Type]*jsonschema.Schema) {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if s == nil || t.Kind() != reflect.Struct || fixed[t] != nil {
		return
	}
	for _, f := range fieldsOf(t) {
		p := s.Properties[f.name]
		if p == nil {
			continue
		}
		ft := t.Field(f.index).Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		target := p
		if p.Type == "array" && p.Items != nil {
			if bounds && f.hasLimit {
				p.MaxItems = intp(f.max)
				if f.min > 0 {
					p.MinItems = intp(f.min)
				}
			}
			target = p.Items
			if bounds && f.each > 0 {
				target.MaxLength = intp(int64(f.each))
			}
			if ft.Kind() == reflect.Slice {
				withTags(p.Items, ft.Elem(), bounds, fixed)
			}
		} else if bounds && f.hasLimit {
			switch p.Type {
			case "string":
				// Schema lengths count characters; the server counts bytes,
				// which is never looser. A minimum of 1 is not published:
				// an empty string is an absent one (a required one is
				// refused by name), and the bytes of "minLength":1 on
				// every argument sit in every model's context.
				p.MaxLength = intp(f.max)
				if f.min > 1 {
					p.MinLength = intp(f.min)
				}
			case "integer":
				lo, hi := float64(f.min), float64(f.max)
				p.Minimum = &lo
				if f.max < guardMax {
					p.Maximum = &hi
				}
			}
		}
		if ft.Kind() == reflect.Struct {
			withTags(p, ft, bounds, fixed)
		}
		if fixed[ft] == nil && len(target.Enum) == 0 {
			for _, e := range f.enum {
				target.Enum = append(target.Enum, e)
			}
		}
	}
}

func intp(n int64) *int { i := int(n); return &i }

// guardMax: an integer's maximum this large (an epoch's, a revision's, a
// token count's) only guards the arithmetic and is never met by a caller;
// it is enforced, not published, so that its digits do not sit in every
// model's context.
const guardMax = 1_000_000_000

// portable rewrites, in place, every list of types that schema inference
// gives Go slices, maps and pointers (["null", "array"]): clients that map
// tool schemas onto a single-type dialect (Gemini's function declarations,
// OpenAPI 3.0) reject or weaken them. Each becomes its one type, except, when
// nullScalars is set (results), a nullable string or number, which is the one
// way a result says "none" (next_cursor, next_offset at the end of a list):
// that becomes anyOf [{type: X}, {type: "null"}]. Results never carry null
// for an array, object or boolean: they send [] or {}, or leave the field
// out (omitempty); the tests check every result against its schema.
func portable(s *jsonschema.Schema, nullScalars bool) {
	if s == nil {
		return
	}
	if len(s.Types) == 2 && slices.Contains(s.Types, "null") {
		t := s.Types[0]
		if t == "null" {
			t = s.Types[1]
		}
		s.Types = nil
		if nullScalars && (t == "string" || t == "integer" || t == "number") {
			s.AnyOf = []*jsonschema.Schema{{Type: t}, {Type: "null"}}
		} else {
			s.Type = t
		}
	}
	for _, p := range s.Properties {
		portable(p, nullScalars)
	}
	for _, d := range s.Defs {
		portable(d, nullScalars)
	}
	portable(s.Items, nullScalars)
	portable(s.AdditionalProperties, nullScalars)
}
