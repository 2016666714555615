package mcpserver

// ToolsetsOf returns the toolsets a tool, prompt or resource template is
// in (toolsets.go), for the tests outside the package.
func ToolsetsOf(name string) Toolsets {
	for _, table := range []map[string]Toolsets{toolToolsets, promptToolsets, resourceToolsets} {
		if in, ok := table[name]; ok {
			return in
		}
	}
	return 0
}
