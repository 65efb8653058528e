#include "convert.h"

#include <Python.h>

#include "rexnlu/error.h"

namespace rexnlu::python {
namespace {

constexpr int kMaxDepth = 64;  // as the engine's JSON input (docs/options.md)

std::string type_name(py::handle value) { return py::str(py::type::handle_of(value).attr("__name__")); }

Json to_json_at(py::handle value, const char* what, int depth) {
  if (depth > kMaxDepth) {
    throw py::value_error(std::string(what) + " is nested deeper than the limit of " + std::to_string(kMaxDepth) +
                          " levels of dicts/lists");
  }
  if (value.is_none()) return nullptr;
  if (PyBool_Check(value.ptr())) return value.cast<bool>();
  if (PyLong_Check(value.ptr())) {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
    if (overflow) throw py::value_error(std::string(what) + ": integer " + std::string(py::str(value)) + " is out of range");
    return static_cast<int64_t>(v);
  }
  if (PyFloat_Check(value.ptr())) return PyFloat_AsDouble(value.ptr());
  if (PyUnicode_Check(value.ptr())) return utf8_arg(value, what);
  if (PyDict_Check(value.ptr())) {
    Json object = Json::object();
    for (auto item : py::reinterpret_borrow<py::dict>(value)) {
      if (!PyUnicode_Check(item.first.ptr()))
        throw py::type_error(std::string(what) + ": dict keys must be str, not " + type_name(item.first));
      object[utf8_arg(item.first, what)] = to_json_at(item.second, what, depth + 1);
    }
    return object;
  }
  if (PyList_Check(value.ptr()) || PyTuple_Check(value.ptr())) {
    Json array = Json::array();
    for (auto item : value) array.push_back(to_json_at(item, what, depth + 1));
    return array;
  }
  throw py::type_error(std::string(what) + ": a value of type " + type_name(value) +
                       " has no JSON form (use None, bool, int, float, str, dict or list)");
}

PyObject* g_model_error = nullptr;
PyObject* g_limit_error = nullptr;

}  // namespace

std::string utf8_arg(py::handle value, const char* what) {
  if (!PyUnicode_Check(value.ptr())) throw py::type_error(std::string(what) + " must be str, not " + type_name(value));
  Py_ssize_t size = 0;
  const char* data = PyUnicode_AsUTF8AndSize(value.ptr(), &size);
  if (!data) {
    PyErr_Clear();
    throw py::value_error(std::string(what) + " has no UTF-8 form (it holds a lone surrogate code point)");
  }
  return std::string(data, static_cast<size_t>(size));
}

std::string schema_arg(py::handle value) {
  if (PyUnicode_Check(value.ptr())) return utf8_arg(value, "schema");
  if (PyDict_Check(value.ptr())) return dump_json(to_json(value, "schema"));
  throw py::type_error("schema must be a dict or a JSON string, not " + type_name(value));
}

Json to_json(py::handle value, const char* what) { return to_json_at(value, what, 0); }

Options options_arg(const py::dict& kwargs) {
  if (kwargs.empty()) return {};
  return options_from_json(to_json(kwargs, "options"));
}

py::object from_json(const Json& j) {
  switch (j.type()) {
    case Json::value_t::null: return py::none();
    case Json::value_t::boolean: return py::bool_(j.get<bool>());
    case Json::value_t::number_integer: return py::int_(j.get<int64_t>());
    case Json::value_t::number_unsigned: return py::int_(j.get<uint64_t>());
    case Json::value_t::number_float: return py::float_(j.get<double>());
    case Json::value_t::string: return py::str(j.get_ref<const std::string&>());
    case Json::value_t::array: {
      py::list list;
      for (const Json& item : j) list.append(from_json(item));
      return list;
    }
    case Json::value_t::object: {
      py::dict dict;
      for (auto it = j.begin(); it != j.end(); ++it) dict[py::str(it.key())] = from_json(it.value());
      return dict;
    }
    default: throw py::value_error("a JSON value of type " + std::string(j.type_name()) + " has no Python form");
  }
}

py::dict result_dict(const Result& r) {
  py::dict d = from_json(result_json(r));  // the one serializer of results (include/rexnlu/json.h)
  if (!r.ok()) d["error_kind"] = error_kind_name(r.error_kind);
  return d;
}

const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kInvalidModel: return "invalid_model";
    case ErrorKind::kInvalidInput: return "invalid_input";
    case ErrorKind::kLimitExceeded: return "limit_exceeded";
    case ErrorKind::kCancelled: return "cancelled";
    case ErrorKind::kIo: return "io";
    case ErrorKind::kInternal: return "internal";
    case ErrorKind::kOutOfMemory: return "out_of_memory";
  }
  return "internal";
}

void register_errors(py::module_& m) {
  g_model_error = PyErr_NewExceptionWithDoc(
      "rexnlu.ModelError", "The model directory, its config, vocabulary or weights are missing, corrupt or inconsistent.",
      PyExc_ValueError, nullptr);
  g_limit_error = PyErr_NewExceptionWithDoc(
      "rexnlu.LimitExceededError", "A valid request exceeds one of the engine's limits (Engine.set_limits).",
      PyExc_ValueError, nullptr);
  if (!g_model_error || !g_limit_error) throw py::error_already_set();
  m.add_object("ModelError", py::handle(g_model_error));
  m.add_object("LimitExceededError", py::handle(g_limit_error));
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      PyObject* type = PyExc_RuntimeError;
      switch (e.kind()) {
        case ErrorKind::kInvalidModel: type = g_model_error; break;
        case ErrorKind::kInvalidInput: type = PyExc_ValueError; break;
        case ErrorKind::kLimitExceeded: type = g_limit_error; break;
        case ErrorKind::kCancelled: type = PyExc_TimeoutError; break;
        case ErrorKind::kIo: type = PyExc_OSError; break;
        case ErrorKind::kInternal: type = PyExc_RuntimeError; break;
        case ErrorKind::kOutOfMemory: type = PyExc_MemoryError; break;
      }
      PyErr_SetString(type, e.what());
    }
  });
}

}  // namespace rexnlu::python
