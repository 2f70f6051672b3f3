package html

import _ "embed"

// The page's style and script, inline in every page: no file, font or
// library is fetched when it opens.
var (
	//go:embed assets/page.css
	pageCSS string
	//go:embed assets/page.js
	pageJS string
)
