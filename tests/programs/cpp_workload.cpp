// cpp_workload.cpp — a C++ program that allocates through new/delete only (std::vector,
// std::map, std::unordered_map, std::string, std::shared_ptr, std::thread), built without any
// link to libnumapage. It prints digests on stdout (compared between runs with and without
// LD_PRELOAD) and, when libnumapage is loaded (found with dlsym), checks on stderr that every
// sampled allocation, in every thread, is libnumapage's:
//   "numapage-check: K of N sampled allocations are libnumapage's"   or "numapage-check: not loaded"
#include <dlfcn.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace {

using node_of_fn = int (*)(const void *);
node_of_fn node_of;
std::atomic<long> sampled{0}, ours{0};

void sample(const void *p)
{
	if (!node_of || !p)
		return;
	sampled++;
	if (node_of(p) >= 0)
		ours++;
}

uint64_t mix(uint64_t h, uint64_t x)
{
	h ^= x + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
	return h;
}

struct Item {
	int id;
	std::string name;
	std::vector<double> values;
};

uint64_t containers(uint32_t seed)
{
	uint64_t h = seed;
	std::map<int, std::string> m;
	std::unordered_map<std::string, std::vector<int>> u;
	std::vector<std::shared_ptr<Item>> items;
	uint32_t x = seed;
	for (int i = 0; i < 60000; i++) {
		x = x * 1664525u + 1013904223u;
		int k = (int)(x % 20000);
		auto &s = m[k];
		s += "value-" + std::to_string(i) + std::string(x % 40, 'x');
		auto &v = u["key" + std::to_string(k % 3000)];
		v.push_back(i);
		if (i % 1000 == 0) {
			sample(s.data());
			sample(v.data());
			sample(&*m.find(k));
		}
		if (i % 5 == 0) {
			auto it = std::make_shared<Item>();
			it->id = i;
			it->name = "item" + std::to_string(i) + std::string(30, 'n');
			it->values.resize((size_t)(x % 100));
			sample(it.get());
			items.push_back(std::move(it));
		}
		if (i % 3 == 0)
			m.erase((int)((x >> 8) % 20000));
	}
	for (auto &kv : m)
		h = mix(h, (uint64_t)kv.first * 31 + kv.second.size());
	for (auto &kv : u)
		h = mix(h, kv.first.size() * 7 + kv.second.size());
	for (auto &it : items)
		h = mix(h, (uint64_t)it->id + it->values.size());
	return h;
}

// Producer threads hand vectors to a consumer, which frees them: cross-thread deletes.
uint64_t handoff()
{
	std::mutex lock;
	std::vector<std::unique_ptr<std::vector<uint32_t>>> queue;
	std::atomic<int> producers_left{4};
	uint64_t sum = 0;
	std::vector<std::thread> ts;
	for (int t = 0; t < 4; t++)
		ts.emplace_back([&, t] {
			for (uint32_t i = 0; i < 20000; i++) {
				auto v = std::make_unique<std::vector<uint32_t>>(1 + (i * 7 + (uint32_t)t) % 64, i);
				sample(v.get());
				sample(v->data());
				std::lock_guard<std::mutex> g(lock);
				queue.push_back(std::move(v));
			}
			producers_left--;
		});
	std::thread consumer([&] {
		for (;;) {
			std::vector<std::unique_ptr<std::vector<uint32_t>>> batch;
			{
				std::lock_guard<std::mutex> g(lock);
				batch.swap(queue);
			}
			for (auto &v : batch)
				for (uint32_t x : *v)
					sum += x;
			if (batch.empty() && producers_left.load() == 0) {
				std::lock_guard<std::mutex> g(lock);
				if (queue.empty())
					break;
			}
		}
	});
	for (auto &t : ts)
		t.join();
	consumer.join();
	return sum;
}

} // namespace

int main()
{
	node_of = reinterpret_cast<node_of_fn>(dlsym(RTLD_DEFAULT, "numa_page_node_of"));
	uint64_t h[4];
	std::vector<std::thread> ts;
	for (int i = 0; i < 4; i++)
		ts.emplace_back([&h, i] { h[i] = containers(1000u + (uint32_t)i); });
	for (auto &t : ts)
		t.join();
	for (int i = 0; i < 4; i++)
		std::printf("containers %d: %016llx\n", i, (unsigned long long)h[i]);
	std::printf("handoff: %llu\n", (unsigned long long)handoff());
	if (node_of)
		std::fprintf(stderr, "numapage-check: %ld of %ld sampled allocations are libnumapage's\n", ours.load(),
			     sampled.load());
	else
		std::fprintf(stderr, "numapage-check: not loaded\n");
	return 0;
}
