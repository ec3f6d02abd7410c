#ifndef GANGWAY_CORE_PLUGINS_ORDER_DRF_ORDER_H_
#define GANGWAY_CORE_PLUGINS_ORDER_DRF_ORDER_H_

namespace gangway::core {

class Registry;

// Registers "drf": hierarchical fair share. At every level of the queue tree the child with
// the lowest weighted dominant share (QueueTree::Share, which includes decayed history) that
// still has pending jobs goes next; inside a leaf queue, higher priority then FIFO. Shares are
// re-read after every start, so a queue that just got resources yields to the others.
void RegisterDrfOrder(Registry& registry);

}  // namespace gangway::core

#endif  // GANGWAY_CORE_PLUGINS_ORDER_DRF_ORDER_H_
