package mcpserver

// ScopeTable is scopeTable, for the tests of package mcpserver_test.
var ScopeTable = scopeTable
