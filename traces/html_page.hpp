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

}  // namespace mlsys
