// A plain-text table for the reports of eval / info / bench: first column left-aligned, the
// others right-aligned, widths counted in terminal columns (CJK characters take two).
#pragma once

#include <string>
#include <vector>

namespace rexnlu::apps {

class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header) { rows_.push_back(std::move(header)); }
  void add_row(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  std::string to_string() const;  // header, a rule, the rows; each line ends with '\n'

 private:
  std::vector<std::vector<std::string>> rows_;
};

// Terminal columns of a UTF-8 string (East Asian wide / fullwidth characters count 2).
size_t display_width(const std::string& utf8);

std::string format_fixed(double value, int decimals);  // "%.*f"

}  // namespace rexnlu::apps
