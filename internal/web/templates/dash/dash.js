// Continuo dashboard: progressive enhancement only. Every page reads
// without this script; with it, parts of a page that say data-live="URL"
// follow server-sent events from URL (see the run page).
"use strict";
