// What every HTML page of the project shares: escaping, the page head with its style, and the script that
// records script errors in the DOM (data-script-errors) and marks the page ready (data-ready), which the
// browser test reads back. Pages are self-contained: no network, no external file.
#pragma once

#include <string>

namespace mlsys {

std::string html_escape(const std::string& text);
// "<!DOCTYPE html>...<body>" with the shared style plus `extra_style`, and the tooltip element.
std::string html_page_start(const std::string& title, const std::string& extra_style = "");
// The shared script (tooltips from data-tip attributes, error record, ready mark) plus `extra_script`, then
// "</body></html>".
std::string html_page_end(const std::string& extra_script = "");

// Where a page written to `output_path` finds the model's documentation (docs/model.md, docs/t10-model.md):
// $MLSYS_DOCS_URL if set (a web copy, say), else the path from the page's folder to the docs folder of the
// source tree the program was built from.
std::string docs_location(const std::string& output_path);
// A rule id ("M20", "T11") as a link to its heading in the model's documentation under `docs`; anything else
// escaped as text.
std::string rule_link(const std::string& rule, const std::string& docs);

}  // namespace mlsys
