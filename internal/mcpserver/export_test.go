package mcpserver

// ScopeTable is scopeTable, for the tests of package mcpserver_test.
var ScopeTable = scopeTable

// ToolsetsOf returns the toolsets a tool, prompt or resource template
// (by name) is in; 0 for a name of none.
func ToolsetsOf(name string) Toolsets {
	for _, table := range []map[string]Toolsets{toolToolsets, promptToolsets, resourceToolsets} {
		if in, ok := table[name]; ok {
			return in
		}
	}
	return 0
}
