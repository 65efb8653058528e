#include "models/link_model.h"

#include <string>
#include <utility>

#include "rexnlu/error.h"

namespace rexnlu::models {

SequenceLinks SequenceLinks::from_dense(LinkLogits z, int32_t length, const LinkQuery& q) {
  SequenceLinks s;
  s.length = length;
  s.threshold = q.threshold;
  if (z.size() != static_cast<size_t>(length) * length) {  // for check() to report, per sequence
    s.dense = std::move(z);
    return s;
  }
  for (int32_t r = 0; r < length; ++r) {
    const float* row = z.data() + static_cast<size_t>(r) * length;
    for (int32_t c = 0; c < length; ++c)
      if (row[c] > q.threshold) s.links.push_back(Link{r, c, row[c]});
  }
  if (q.dense) s.dense = std::move(z);
  return s;
}

void SequenceLinks::check(const char* who) const {
  const auto fail = [&](const std::string& what) {
    throw InternalError(std::string(who) + ": the model's links of a sequence of " + std::to_string(length) +
                        " tokens: " + what);
  };
  if (!dense.empty() && dense.size() != static_cast<size_t>(length) * length)
    fail(std::to_string(dense.size()) + " dense logits");
  for (size_t n = 0; n < links.size(); ++n) {
    const Link& l = links[n];
    if (l.row < 0 || l.row >= length || l.col < 0 || l.col >= length)
      fail("link " + std::to_string(n) + " (" + std::to_string(l.row) + ", " + std::to_string(l.col) + ") out of range");
    if (n > 0 && (links[n - 1].row > l.row || (links[n - 1].row == l.row && links[n - 1].col >= l.col)))
      fail("link " + std::to_string(n) + " out of order");
  }
}

std::vector<SequenceLinks> LinkModel::forward_links(const std::vector<SequenceInput>& batch) {
  std::vector<LinkLogits> z = forward(batch);
  if (z.size() != batch.size())
    throw InternalError("LinkModel::forward_links: the model returned " + std::to_string(z.size()) + " results for " +
                        std::to_string(batch.size()) + " sequences");
  std::vector<SequenceLinks> out;
  out.reserve(batch.size());
  for (size_t b = 0; b < batch.size(); ++b) {
    out.push_back(SequenceLinks::from_dense(std::move(z[b]), batch[b].length(), batch[b].query));
    z[b] = {};
  }
  return out;
}

}  // namespace rexnlu::models
