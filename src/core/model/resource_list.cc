#include "core/model/resource_list.h"

#include <algorithm>

namespace gangway::core {

std::string GpuModelResource(std::string_view model) {
  std::string name(kGpuResource);
  name += '/';
  name += model;
  return name;
}

ResourceList::ResourceList(std::initializer_list<std::pair<std::string, int64_t>> amounts) {
  for (const auto& [name, amount] : amounts) Add(name, amount);
}

int64_t ResourceList::Get(std::string_view name) const {
  auto it = std::lower_bound(amounts_.begin(), amounts_.end(), name,
                             [](const auto& e, std::string_view n) { return e.first < n; });
  return it != amounts_.end() && it->first == name ? it->second : 0;
}

bool ResourceList::Has(std::string_view name) const {
  auto it = std::lower_bound(amounts_.begin(), amounts_.end(), name,
                             [](const auto& e, std::string_view n) { return e.first < n; });
  return it != amounts_.end() && it->first == name;
}

void ResourceList::Set(std::string_view name, int64_t amount) {
  auto it = std::lower_bound(amounts_.begin(), amounts_.end(), name,
                             [](const auto& e, std::string_view n) { return e.first < n; });
  if (it != amounts_.end() && it->first == name) {
    it->second = amount;
  } else {
    amounts_.insert(it, {std::string(name), amount});
  }
}

void ResourceList::Add(std::string_view name, int64_t amount) {
  auto it = std::lower_bound(amounts_.begin(), amounts_.end(), name,
                             [](const auto& e, std::string_view n) { return e.first < n; });
  if (it != amounts_.end() && it->first == name) {
    it->second += amount;
  } else {
    amounts_.insert(it, {std::string(name), amount});
  }
}

void ResourceList::Add(const ResourceList& other) {
  for (const auto& [name, amount] : other.amounts_) Add(name, amount);
}

void ResourceList::Subtract(const ResourceList& other) {
  for (const auto& [name, amount] : other.amounts_) Add(name, -amount);
}

}  // namespace gangway::core
