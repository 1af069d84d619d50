// Every annotation of the API, through the header's inline functions.
// ANNOTATE_FUNCTION names the function: annotate_disabled in the object built
// with FERRET_ENABLED=0, annotate_enabled in the other. Both are built without
// inlining (-O0), so that every inline function of the header is a weak
// definition the linker picks one copy of for the whole program: it must
// pick each configuration's own.
#include "annotations.hpp"

#include <ferret/ferret.hpp>

annotation_results ANNOTATE_FUNCTION(const char* thread_name, void* memory, std::size_t bytes,
                                     int metadata_value) {
  annotation_results results;
  ferret::set_thread_name(thread_name);
  FERRET_FUNCTION();
  FERRET_REGION("mixed macro region");
  const ferret::region literal{"mixed region"};
  FERRET_MARK("mixed macro mark");
  ferret::mark("mixed mark");
  FERRET_COUNTER("mixed macro counter", 1.0);
  const ferret::counter counter{"mixed counter"};
  counter.record(2.0);
  const ferret::name registered = ferret::register_name("mixed registered name");
  results.name_registered = static_cast<bool>(registered);
  ferret::begin(registered);
  ferret::end(registered);
  ferret::begin("mixed begin");
  ferret::end("mixed begin");
  ferret::set_metadata("mixed key", metadata_value);
  ferret::set_metadata("mixed text", thread_name);
  {
    ferret::data_object object{"mixed object", memory, bytes};
    ferret::data_object moved{std::move(object)};
    results.object_id = moved.id();
    results.raw_object_id = ferret::register_data_object("mixed raw object", memory, bytes / 2);
    ferret::unregister_data_object(results.raw_object_id);
  }
  return results;
}
