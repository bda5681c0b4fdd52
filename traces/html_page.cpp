#include "traces/html_page.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>

namespace mlsys {

std::string html_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else if (c == '"')
      out += "&quot;";
    else
      out += c;
  }
  return out;
}

std::string html_page_start(const std::string& title, const std::string& extra_style) {
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" + html_escape(title) +
         "</title>\n<style>\n"
         "body{font-family:sans-serif;margin:1.5em;color:#222}h1{font-size:1.4em}h2{font-size:1.15em;margin-"
         "top:1.6em}\n"
         ".summary td{padding:2px 12px 2px 0}.valid{color:#1a7f37;font-weight:bold}"
         ".invalid{color:#c62828;font-weight:bold}\n"
         "table.grid{border-collapse:collapse;font-size:12px}table.grid td,table.grid th{border:1px solid "
         "#ccc;"
         "padding:2px 6px;text-align:right}table.grid th{background:#f4f4f4}.note{color:#666}\n"
         "#tip{position:fixed;pointer-events:none;background:#333;color:#fff;font-size:12px;padding:4px 8px;"
         "border-radius:3px;display:none;white-space:pre;z-index:10}\n" +
         extra_style + "</style></head><body>\n<div id=\"tip\"></div>\n";
}

std::string html_page_end(const std::string& extra_script) {
  return "<script>\n(function(){\n"
         "  var errors=[];window.addEventListener('error',function(e){errors.push(String(e.message));\n"
         "    document.documentElement.setAttribute('data-script-errors',errors.join(' | '));});\n"
         "  var tip=document.getElementById('tip');\n"
         "  document.addEventListener('mousemove',function(e){\n"
         "    var t=e.target.closest?e.target.closest('[data-tip]'):null;\n"
         "    if(!t){tip.style.display='none';return;}\n"
         "    tip.textContent=t.getAttribute('data-tip');tip.style.display='block';\n"
         "    tip.style.left=(e.clientX+14)+'px';tip.style.top=(e.clientY+14)+'px';});\n" +
         extra_script +
         "  document.documentElement.setAttribute('data-ready','1');\n})();\n</script>\n</body></html>\n";
}

std::string docs_location(const std::string& output_path) {
  if (const char* url = std::getenv("MLSYS_DOCS_URL"); url && *url) return url;
  namespace fs = std::filesystem;
  std::error_code error;
  const fs::path folder = fs::weakly_canonical(fs::absolute(output_path, error), error).parent_path();
  const fs::path relative = fs::path(MLSYS_DOCS_DIR).lexically_relative(folder);
  return relative.empty() ? std::string(MLSYS_DOCS_DIR) : relative.generic_string();
}

std::string rule_link(const std::string& rule, const std::string& docs) {
  const bool id = rule.size() >= 2 && (rule[0] == 'M' || rule[0] == 'T') &&
                  std::all_of(rule.begin() + 1, rule.end(), [](unsigned char c) { return std::isdigit(c); });
  if (!id) return html_escape(rule);
  const std::string file = rule[0] == 'M' ? "model.md" : "t10-model.md";
  const std::string anchor = std::string(1, static_cast<char>(std::tolower(rule[0]))) + rule.substr(1);
  return "<a class=\"rule\" href=\"" + html_escape(docs + "/" + file + "#" + anchor) + "\">" + rule + "</a>";
}

}  // namespace mlsys
