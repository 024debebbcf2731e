<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="zh_CN">
    <context>
        <name>AdapterPanel</name>
        <message>
            <source>LoRA adapters</source>
            <translation>LoRA 适配器</translation>
        </message>
        <message>
            <source>Adapters change a loaded model's behaviour without loading another model. This version of Hearth cannot apply them yet; they will be listed here.</source>
            <translation>适配器无需加载另一个模型即可改变已加载模型的行为。此版本的 Hearth 尚不能应用适配器；它们将在此处列出。</translation>
        </message>
    </context>
    <context>
        <name>ChatExport</name>
        <message>
            <source>You</source>
            <translation>您</translation>
        </message>
        <message>
            <source>Assistant</source>
            <translation>助手</translation>
        </message>
        <message>
            <source>System</source>
            <translation>系统</translation>
        </message>
        <message>
            <source>Exported from Hearth on %1</source>
            <translation>于 %1 从 Hearth 导出</translation>
        </message>
        <message>
            <source>System prompt</source>
            <translation>系统提示词</translation>
        </message>
        <message>
            <source>(answer interrupted)</source>
            <translation>（回答被中断）</translation>
        </message>
        <message>
            <source>%1 tokens, %2 tokens/s</source>
            <translation>%1 个词元，%2 词元/秒</translation>
        </message>
    </context>
    <context>
        <name>ChatView</name>
        <message>
            <source>Chat</source>
            <translation>聊天</translation>
        </message>
        <message>
            <source>New chat</source>
            <translation>新对话</translation>
        </message>
        <message>
            <source>System prompt and sampling of this conversation</source>
            <translation>此对话的系统提示词和采样设置</translation>
        </message>
        <message>
            <source>Messages</source>
            <translation>消息</translation>
        </message>
        <message>
            <source>What can I help you with?</source>
            <translation>有什么可以帮您？</translation>
        </message>
        <message>
            <source>Everything runs on this computer. Your conversations stay here.</source>
            <translation>一切都在这台电脑上运行。您的对话只保存在这里。</translation>
        </message>
        <message>
            <source>Load a model to start: it runs entirely on this computer.</source>
            <translation>加载一个模型即可开始：它完全在这台电脑上运行。</translation>
        </message>
        <message>
            <source>Choose a model…</source>
            <translation>选择模型…</translation>
        </message>
        <message>
            <source>Choose a model to load</source>
            <translation>选择要加载的模型</translation>
        </message>
    </context>
    <context>
        <name>CodeBlock</name>
        <message>
            <source>Code block, %1</source>
            <translation>代码块，%1</translation>
        </message>
        <message>
            <source>Code block</source>
            <translation>代码块</translation>
        </message>
        <message>
            <source>code</source>
            <translation>代码</translation>
        </message>
        <message>
            <source>Copied</source>
            <translation>已复制</translation>
        </message>
        <message>
            <source>Copy</source>
            <translation>复制</translation>
        </message>
        <message>
            <source>Copy code</source>
            <translation>复制代码</translation>
        </message>
        <message>
            <source>Code</source>
            <translation>代码</translation>
        </message>
    </context>
    <context>
        <name>Composer</name>
        <message>
            <source>Message Hearth…</source>
            <translation>给 Hearth 发消息…</translation>
        </message>
        <message>
            <source>Load a model to start chatting</source>
            <translation>加载模型后即可开始聊天</translation>
        </message>
        <message>
            <source>Message</source>
            <translation>消息</translation>
        </message>
        <message>
            <source>Enter sends, Shift+Enter starts a new line</source>
            <translation>按 Enter 发送，Shift+Enter 换行</translation>
        </message>
        <message>
            <source>Send</source>
            <translation>发送</translation>
        </message>
        <message>
            <source>Send message (Enter)</source>
            <translation>发送消息（Enter）</translation>
        </message>
        <message>
            <source>Send (Enter)</source>
            <translation>发送（Enter）</translation>
        </message>
        <message>
            <source>Stop</source>
            <translation>停止</translation>
        </message>
        <message>
            <source>Stop generating (Esc)</source>
            <translation>停止生成（Esc）</translation>
        </message>
        <message>
            <source>Stop (Esc)</source>
            <translation>停止（Esc）</translation>
        </message>
        <message>
            <source>No model is loaded.</source>
            <translation>未加载模型。</translation>
        </message>
        <message>
            <source>Answers come from a language model and can be wrong.</source>
            <translation>回答由语言模型生成，可能有误。</translation>
        </message>
    </context>
    <context>
        <name>ConversationSettingsDialog</name>
        <message>
            <source>Conversation settings</source>
            <translation>对话设置</translation>
        </message>
        <message>
            <source>System prompt</source>
            <translation>系统提示词</translation>
        </message>
        <message>
            <source>Instructions the model follows throughout this conversation</source>
            <translation>模型在整个对话中遵循的指令</translation>
        </message>
        <message>
            <source>Use its own sampling settings</source>
            <translation>使用单独的采样设置</translation>
        </message>
    </context>
    <context>
        <name>ErrorDialog</name>
        <message>
            <source>Needed</source>
            <translation>所需</translation>
        </message>
        <message>
            <source>Free</source>
            <translation>可用</translation>
        </message>
        <message>
            <source>Device</source>
            <translation>设备</translation>
        </message>
        <message>
            <source>Try a smaller maximum sequence length or cache, the CPU, or a more strongly quantized version of the model.</source>
            <translation>请尝试更小的最大序列长度或缓存、改用 CPU，或使用量化程度更高的模型版本。</translation>
        </message>
        <message>
            <source>Copy details</source>
            <translation>复制详细信息</translation>
        </message>
        <message>
            <source>Copy the error details</source>
            <translation>复制错误详细信息</translation>
        </message>
    </context>
    <context>
        <name>ExportDialog</name>
        <message>
            <source>Export as Markdown</source>
            <translation>导出为 Markdown</translation>
        </message>
        <message>
            <source>Export as JSON</source>
            <translation>导出为 JSON</translation>
        </message>
        <message>
            <source>Markdown (*.md)</source>
            <translation>Markdown（*.md）</translation>
        </message>
        <message>
            <source>JSON (*.json)</source>
            <translation>JSON（*.json）</translation>
        </message>
    </context>
    <context>
        <name>ImportDialog</name>
        <message>
            <source>Import a conversation</source>
            <translation>导入对话</translation>
        </message>
        <message>
            <source>Hearth conversations (*.json)</source>
            <translation>Hearth 对话（*.json）</translation>
        </message>
    </context>
    <context>
        <name>LibraryDialog</name>
        <message>
            <source>Model library</source>
            <translation>模型库</translation>
        </message>
        <message>
            <source>Import a GGUF file…</source>
            <translation>导入 GGUF 文件…</translation>
        </message>
        <message>
            <source>Import a model folder…</source>
            <translation>导入模型文件夹…</translation>
        </message>
        <message>
            <source>Looking for models</source>
            <translation>正在查找模型</translation>
        </message>
        <message>
            <source>Look for models again</source>
            <translation>重新查找模型</translation>
        </message>
        <message>
            <source>Quantize…</source>
            <translation>量化…</translation>
        </message>
        <message>
            <source>The quantization wizard is not part of this version yet.</source>
            <translation>此版本尚未包含量化向导。</translation>
        </message>
        <message>
            <source>Quantize a model (not available yet)</source>
            <translation>量化模型（尚不可用）</translation>
        </message>
        <message>
            <source>Models</source>
            <translation>模型</translation>
        </message>
        <message>
            <source>%1 · %2 parameters · %3 bits per weight · %4 · context %5</source>
            <translation>%1 · %2 参数 · 每权重 %3 位 · %4 · 上下文 %5</translation>
        </message>
        <message>
            <source>Use</source>
            <translation>使用</translation>
        </message>
        <message>
            <source>Use %1</source>
            <translation>使用 %1</translation>
        </message>
        <message>
            <source>Remove %1 from the library (the files stay on disk)</source>
            <translation>从模型库中移除 %1（文件仍保留在磁盘上）</translation>
        </message>
        <message>
            <source>No models yet. Put GGUF files or model folders into %1, add a folder below, or import a model.</source>
            <translation>还没有模型。请将 GGUF 文件或模型文件夹放入 %1，在下方添加文件夹，或导入模型。</translation>
        </message>
        <message>
            <source>Folders</source>
            <translation>文件夹</translation>
        </message>
        <message>
            <source>%1 (default)</source>
            <translation>%1（默认）</translation>
        </message>
        <message>
            <source>Stop looking in %1</source>
            <translation>不再在 %1 中查找</translation>
        </message>
        <message>
            <source>Add a folder…</source>
            <translation>添加文件夹…</translation>
        </message>
        <message>
            <source>Import a GGUF model</source>
            <translation>导入 GGUF 模型</translation>
        </message>
        <message>
            <source>GGUF models (*.gguf)</source>
            <translation>GGUF 模型（*.gguf）</translation>
        </message>
        <message>
            <source>This model cannot be imported.</source>
            <translation>无法导入此模型。</translation>
        </message>
        <message>
            <source>Add a folder of models</source>
            <translation>添加模型文件夹</translation>
        </message>
        <message>
            <source>Import a model folder</source>
            <translation>导入模型文件夹</translation>
        </message>
    </context>
    <context>
        <name>LivePanel</name>
        <message>
            <source>Load a model to see its memory use and speed here.</source>
            <translation>加载模型后，可在此查看其内存占用和速度。</translation>
        </message>
        <message>
            <source>Memory on %1</source>
            <translation>%1 上的内存</translation>
        </message>
        <message>
            <source>Memory</source>
            <translation>内存</translation>
        </message>
        <message>
            <source>Weights</source>
            <translation>权重</translation>
        </message>
        <message>
            <source>Cache</source>
            <translation>缓存</translation>
        </message>
        <message>
            <source>Activations</source>
            <translation>激活值</translation>
        </message>
        <message>
            <source>Workspace</source>
            <translation>工作区</translation>
        </message>
        <message>
            <source>Hearth uses %1 · %2 free of %3</source>
            <translation>Hearth 占用 %1 · 共 %3，可用 %2</translation>
        </message>
        <message>
            <source>Speed</source>
            <translation>速度</translation>
        </message>
        <message>
            <source>Prompt</source>
            <translation>提示词</translation>
        </message>
        <message>
            <source>%1 tokens/s</source>
            <translation>%1 词元/秒</translation>
        </message>
        <message>
            <source>Generation</source>
            <translation>生成</translation>
        </message>
        <message>
            <source>Now</source>
            <translation>当前</translation>
        </message>
        <message>
            <source>Context</source>
            <translation>上下文</translation>
        </message>
        <message>
            <source>Context used</source>
            <translation>已用上下文</translation>
        </message>
        <message>
            <source>%1 of %2 tokens used by the last answer</source>
            <translation>上一次回答使用了 %1 / %2 个词元</translation>
        </message>
    </context>
    <context>
        <name>LoadPanel</name>
        <message>
            <source>Model</source>
            <translation>模型</translation>
        </message>
        <message>
            <source>No models found</source>
            <translation>未找到模型</translation>
        </message>
        <message>
            <source>Model to load</source>
            <translation>要加载的模型</translation>
        </message>
        <message>
            <source>Open a model file or folder…</source>
            <translation>打开模型文件或文件夹…</translation>
        </message>
        <message>
            <source>%1 · %2 parameters · %3 bits per weight · %4 on disk · trained for %5 tokens</source>
            <translation>%1 · %2 参数 · 每权重 %3 位 · 磁盘占用 %4 · 训练上下文 %5 词元</translation>
        </message>
        <message>
            <source>Device</source>
            <translation>设备</translation>
        </message>
        <message>
            <source>GPU</source>
            <translation>GPU</translation>
        </message>
        <message>
            <source>Run on the GPU</source>
            <translation>在 GPU 上运行</translation>
        </message>
        <message>
            <source>This build of Hearth has no CUDA support.</source>
            <translation>此版本的 Hearth 不支持 CUDA。</translation>
        </message>
        <message>
            <source>CPU</source>
            <translation>CPU</translation>
        </message>
        <message>
            <source>Run on the CPU</source>
            <translation>在 CPU 上运行</translation>
        </message>
        <message>
            <source>Context</source>
            <translation>上下文</translation>
        </message>
        <message>
            <source>Maximum sequence length</source>
            <translation>最大序列长度</translation>
        </message>
        <message>
            <source>Maximum sequence length in tokens</source>
            <translation>最大序列长度（词元）</translation>
        </message>
        <message>
            <source>Longer than the %1 tokens the model was trained for: choose a RoPE scaling, or expect poor answers past that length.</source>
            <translation>超过了模型训练时的 %1 个词元：请选择一种 RoPE 缩放，否则超出该长度后回答质量会下降。</translation>
        </message>
        <message>
            <source>Cache size (tokens)</source>
            <translation>缓存大小（词元）</translation>
        </message>
        <message>
            <source>0 sizes the cache for the maximum sequence length.</source>
            <translation>0 表示按最大序列长度确定缓存大小。</translation>
        </message>
        <message>
            <source>Cache size in tokens, 0 for automatic</source>
            <translation>缓存大小（词元），0 表示自动</translation>
        </message>
        <message>
            <source>RoPE scaling</source>
            <translation>RoPE 缩放</translation>
        </message>
        <message>
            <source>As the model specifies (%1)</source>
            <translation>按模型设定（%1）</translation>
        </message>
        <message>
            <source>none</source>
            <translation>无</translation>
        </message>
        <message>
            <source>None</source>
            <translation>无</translation>
        </message>
        <message>
            <source>Linear</source>
            <translation>线性</translation>
        </message>
        <message>
            <source>NTK-aware (alpha)</source>
            <translation>NTK 感知（alpha）</translation>
        </message>
        <message>
            <source>YaRN</source>
            <translation>YaRN</translation>
        </message>
        <message>
            <source>Llama 3</source>
            <translation>Llama 3</translation>
        </message>
        <message>
            <source>RoPE scaling method</source>
            <translation>RoPE 缩放方式</translation>
        </message>
        <message>
            <source>Scaling factor</source>
            <translation>缩放因子</translation>
        </message>
        <message>
            <source>How many times the trained context the model should reach.</source>
            <translation>模型应达到训练上下文长度的多少倍。</translation>
        </message>
        <message>
            <source>Alpha</source>
            <translation>Alpha</translation>
        </message>
        <message>
            <source>NTK-aware scaling of the rotary base; 1 changes nothing.</source>
            <translation>对旋转位置编码基数进行 NTK 感知缩放；1 表示不变。</translation>
        </message>
        <message>
            <source>Original context</source>
            <translation>原始上下文</translation>
        </message>
        <message>
            <source>Low-frequency factor</source>
            <translation>低频因子</translation>
        </message>
        <message>
            <source>High-frequency factor</source>
            <translation>高频因子</translation>
        </message>
        <message>
            <source>Beta fast</source>
            <translation>Beta 快</translation>
        </message>
        <message>
            <source>Beta slow</source>
            <translation>Beta 慢</translation>
        </message>
        <message>
            <source>Memory</source>
            <translation>内存</translation>
        </message>
        <message>
            <source>Weights</source>
            <translation>权重</translation>
        </message>
        <message>
            <source>Cache</source>
            <translation>缓存</translation>
        </message>
        <message>
            <source>Activations</source>
            <translation>激活值</translation>
        </message>
        <message>
            <source>Workspace</source>
            <translation>工作区</translation>
        </message>
        <message>
            <source>Working out the memory plan…</source>
            <translation>正在计算内存方案…</translation>
        </message>
        <message>
            <source>Choose a model to see what it needs.</source>
            <translation>选择模型以查看其所需资源。</translation>
        </message>
        <message>
            <source>Needs %1 of %2 free on %3.</source>
            <translation>需要 %1，%3 上可用 %2。</translation>
        </message>
        <message>
            <source>It does not fit.</source>
            <translation>内存不足。</translation>
        </message>
        <message>
            <source>Load instead</source>
            <translation>改为加载此模型</translation>
        </message>
        <message>
            <source>Load</source>
            <translation>加载</translation>
        </message>
        <message>
            <source>Load the model with these settings</source>
            <translation>使用这些设置加载模型</translation>
        </message>
        <message>
            <source>Cancel loading</source>
            <translation>取消加载</translation>
        </message>
        <message>
            <source>Load progress</source>
            <translation>加载进度</translation>
        </message>
        <message>
            <source>Open a model</source>
            <translation>打开模型</translation>
        </message>
        <message>
            <source>GGUF models (*.gguf)</source>
            <translation>GGUF 模型（*.gguf）</translation>
        </message>
        <message>
            <source>Model configuration (config.json)</source>
            <translation>模型配置（config.json）</translation>
        </message>
    </context>
    <context>
        <name>Main</name>
        <message>
            <source>%1 — Hearth</source>
            <translation>%1 — Hearth</translation>
        </message>
        <message>
            <source>Your conversation history could not be opened.</source>
            <translation>无法打开您的对话历史。</translation>
        </message>
        <message>
            <source>Conversations of this session will not be saved.</source>
            <translation>本次会话中的对话将不会被保存。</translation>
        </message>
        <message>
            <source>The conversation could not be exported.</source>
            <translation>无法导出对话。</translation>
        </message>
        <message>
            <source>The conversation could not be imported.</source>
            <translation>无法导入对话。</translation>
        </message>
        <message>
            <source>Something went wrong.</source>
            <translation>出现了问题。</translation>
        </message>
    </context>
    <context>
        <name>MemoryBar</name>
        <message>
            <source>Memory: %1 of %2</source>
            <translation>内存：%1 / %2</translation>
        </message>
    </context>
    <context>
        <name>MessageDelegate</name>
        <message>
            <source>You</source>
            <translation>您</translation>
        </message>
        <message>
            <source>Assistant</source>
            <translation>助手</translation>
        </message>
        <message>
            <source>Your message</source>
            <translation>您的消息</translation>
        </message>
        <message>
            <source>Edit your message</source>
            <translation>编辑您的消息</translation>
        </message>
        <message>
            <source>Cancel</source>
            <translation>取消</translation>
        </message>
        <message>
            <source>Send again</source>
            <translation>重新发送</translation>
        </message>
        <message>
            <source>The model is thinking</source>
            <translation>模型正在思考</translation>
        </message>
        <message>
            <source>This answer was interrupted.</source>
            <translation>此回答被中断了。</translation>
        </message>
        <message numerus="yes">
            <source>%n token(s)</source>
            <translation>
                <numerusform>%n 个词元</numerusform>
            </translation>
        </message>
        <message>
            <source>%1 tokens/s</source>
            <translation>%1 词元/秒</translation>
        </message>
        <message>
            <source>prompt %1 tokens/s</source>
            <translation>提示词 %1 词元/秒</translation>
        </message>
        <message>
            <source>stopped</source>
            <translation>已停止</translation>
        </message>
        <message>
            <source>cut at the token limit</source>
            <translation>已达词元上限而截断</translation>
        </message>
        <message>
            <source>Copy message</source>
            <translation>复制消息</translation>
        </message>
        <message>
            <source>Edit and send again</source>
            <translation>编辑并重新发送</translation>
        </message>
        <message>
            <source>Regenerate the answer</source>
            <translation>重新生成回答</translation>
        </message>
    </context>
    <context>
        <name>ModelBar</name>
        <message>
            <source>Show or hide conversations (Ctrl+B)</source>
            <translation>显示或隐藏对话列表（Ctrl+B）</translation>
        </message>
        <message>
            <source>Loading… %1</source>
            <translation>正在加载… %1</translation>
        </message>
        <message>
            <source>No model loaded</source>
            <translation>未加载模型</translation>
        </message>
        <message>
            <source>%1 · %2 · %3 tokens</source>
            <translation>%1 · %2 · %3 词元</translation>
        </message>
        <message>
            <source>Load progress</source>
            <translation>加载进度</translation>
        </message>
        <message>
            <source>Cancel</source>
            <translation>取消</translation>
        </message>
        <message>
            <source>Cancel loading</source>
            <translation>取消加载</translation>
        </message>
        <message>
            <source>Unload</source>
            <translation>卸载</translation>
        </message>
        <message>
            <source>Unload the model</source>
            <translation>卸载模型</translation>
        </message>
        <message>
            <source>Load a model…</source>
            <translation>加载模型…</translation>
        </message>
        <message>
            <source>Load a model</source>
            <translation>加载模型</translation>
        </message>
        <message>
            <source>%1 tokens/s</source>
            <translation>%1 词元/秒</translation>
        </message>
        <message>
            <source>Model library (Ctrl+L)</source>
            <translation>模型库（Ctrl+L）</translation>
        </message>
        <message>
            <source>Show or hide the model and performance panel</source>
            <translation>显示或隐藏模型与性能面板</translation>
        </message>
        <message>
            <source>Settings (Ctrl+,)</source>
            <translation>设置（Ctrl+,）</translation>
        </message>
    </context>
    <context>
        <name>QObject</name>
        <message>
            <source>Cannot write %1: %2</source>
            <translation>无法写入 %1：%2</translation>
        </message>
    </context>
    <context>
        <name>RateChart</name>
        <message>
            <source>Tokens per second during the answer</source>
            <translation>回答过程中的每秒词元数</translation>
        </message>
    </context>
    <context>
        <name>SamplingEditor</name>
        <message>
            <source>Temperature</source>
            <translation>温度</translation>
        </message>
        <message>
            <source>0 always picks the most likely token; higher values vary more.</source>
            <translation>0 总是选择可能性最大的词元；数值越高变化越大。</translation>
        </message>
        <message>
            <source>Top-k</source>
            <translation>Top-k</translation>
        </message>
        <message>
            <source>Sample among the k most likely tokens; 0 turns it off.</source>
            <translation>在可能性最大的 k 个词元中采样；0 表示关闭。</translation>
        </message>
        <message>
            <source>Top-p</source>
            <translation>Top-p</translation>
        </message>
        <message>
            <source>Sample among the most likely tokens that together reach this probability; 1 turns it off.</source>
            <translation>在累计概率达到该值的最可能词元中采样；1 表示关闭。</translation>
        </message>
        <message>
            <source>Min-p</source>
            <translation>Min-p</translation>
        </message>
        <message>
            <source>Drop tokens less likely than this fraction of the most likely one; 0 turns it off.</source>
            <translation>舍弃概率低于最可能词元该比例的词元；0 表示关闭。</translation>
        </message>
        <message>
            <source>Repetition penalty</source>
            <translation>重复惩罚</translation>
        </message>
        <message>
            <source>Above 1 discourages repeating earlier tokens; 1 turns it off.</source>
            <translation>大于 1 时抑制重复先前的词元；1 表示关闭。</translation>
        </message>
        <message>
            <source>Longest answer (tokens)</source>
            <translation>最长回答（词元）</translation>
        </message>
    </context>
    <context>
        <name>SettingsDialog</name>
        <message>
            <source>Settings</source>
            <translation>设置</translation>
        </message>
        <message>
            <source>Appearance</source>
            <translation>外观</translation>
        </message>
        <message>
            <source>Generation</source>
            <translation>生成</translation>
        </message>
        <message>
            <source>Models</source>
            <translation>模型</translation>
        </message>
        <message>
            <source>Theme</source>
            <translation>主题</translation>
        </message>
        <message>
            <source>Follow the system</source>
            <translation>跟随系统</translation>
        </message>
        <message>
            <source>Light</source>
            <translation>浅色</translation>
        </message>
        <message>
            <source>Dark</source>
            <translation>深色</translation>
        </message>
        <message>
            <source>Theme: %1</source>
            <translation>主题：%1</translation>
        </message>
        <message>
            <source>Text size</source>
            <translation>文字大小</translation>
        </message>
        <message>
            <source>Text size in points</source>
            <translation>文字大小（磅）</translation>
        </message>
        <message>
            <source>%1 pt</source>
            <translation>%1 磅</translation>
        </message>
        <message>
            <source>Language</source>
            <translation>语言</translation>
        </message>
        <message>
            <source>Default sampling for conversations without their own</source>
            <translation>未单独设置的对话所用的默认采样</translation>
        </message>
        <message>
            <source>Restore the defaults</source>
            <translation>恢复默认值</translation>
        </message>
        <message>
            <source>System prompt for new conversations</source>
            <translation>新对话的系统提示词</translation>
        </message>
        <message>
            <source>Folders searched for models</source>
            <translation>查找模型的文件夹</translation>
        </message>
        <message>
            <source>%1 (default)</source>
            <translation>%1（默认）</translation>
        </message>
        <message>
            <source>Stop looking in %1</source>
            <translation>不再在 %1 中查找</translation>
        </message>
        <message>
            <source>Add folders and import single models in the model library (Ctrl+L).</source>
            <translation>请在模型库（Ctrl+L）中添加文件夹或导入单个模型。</translation>
        </message>
    </context>
    <context>
        <name>SidePanel</name>
        <message>
            <source>Model and performance</source>
            <translation>模型与性能</translation>
        </message>
        <message>
            <source>Model</source>
            <translation>模型</translation>
        </message>
        <message>
            <source>Load a model</source>
            <translation>加载模型</translation>
        </message>
        <message>
            <source>Live</source>
            <translation>实时</translation>
        </message>
        <message>
            <source>Memory and speed</source>
            <translation>内存与速度</translation>
        </message>
        <message>
            <source>Adapters</source>
            <translation>适配器</translation>
        </message>
        <message>
            <source>LoRA adapters</source>
            <translation>LoRA 适配器</translation>
        </message>
    </context>
    <context>
        <name>Sidebar</name>
        <message>
            <source>Conversations</source>
            <translation>对话</translation>
        </message>
        <message>
            <source>New chat</source>
            <translation>新对话</translation>
        </message>
        <message>
            <source>New chat (Ctrl+N)</source>
            <translation>新对话（Ctrl+N）</translation>
        </message>
        <message>
            <source>Search conversations (Ctrl+F)</source>
            <translation>搜索对话（Ctrl+F）</translation>
        </message>
        <message>
            <source>Search conversations</source>
            <translation>搜索对话</translation>
        </message>
        <message>
            <source>Conversation list</source>
            <translation>对话列表</translation>
        </message>
        <message>
            <source>Actions for %1</source>
            <translation>%1 的操作</translation>
        </message>
        <message>
            <source>Rename…</source>
            <translation>重命名…</translation>
        </message>
        <message>
            <source>Export as Markdown…</source>
            <translation>导出为 Markdown…</translation>
        </message>
        <message>
            <source>Export as JSON…</source>
            <translation>导出为 JSON…</translation>
        </message>
        <message>
            <source>Delete</source>
            <translation>删除</translation>
        </message>
        <message>
            <source>Nothing found.</source>
            <translation>未找到任何内容。</translation>
        </message>
        <message>
            <source>Your conversations will appear here.</source>
            <translation>您的对话将显示在这里。</translation>
        </message>
        <message>
            <source>Import…</source>
            <translation>导入…</translation>
        </message>
        <message>
            <source>Import a conversation from JSON</source>
            <translation>从 JSON 导入对话</translation>
        </message>
        <message>
            <source>Models</source>
            <translation>模型</translation>
        </message>
        <message>
            <source>Open the model library</source>
            <translation>打开模型库</translation>
        </message>
        <message>
            <source>Rename conversation</source>
            <translation>重命名对话</translation>
        </message>
        <message>
            <source>Conversation title</source>
            <translation>对话标题</translation>
        </message>
    </context>
    <context>
        <name>UndoBar</name>
        <message>
            <source>Deleted “%1”</source>
            <translation>已删除“%1”</translation>
        </message>
        <message>
            <source>Undo</source>
            <translation>撤销</translation>
        </message>
        <message>
            <source>Undo the deletion</source>
            <translation>撤销删除</translation>
        </message>
    </context>
    <context>
        <name>hearth::app::ChatSession</name>
        <message>
            <source>Load a model first: choose one in the model bar or the library.</source>
            <translation>请先加载模型：在模型栏或模型库中选择一个。</translation>
        </message>
        <message>
            <source>The model is busy or not loaded.</source>
            <translation>模型正忙或尚未加载。</translation>
        </message>
    </context>
    <context>
        <name>hearth::app::ConversationList</name>
        <message>
            <source>Today</source>
            <translation>今天</translation>
        </message>
        <message>
            <source>Yesterday</source>
            <translation>昨天</translation>
        </message>
        <message>
            <source>Previous 7 days</source>
            <translation>过去 7 天</translation>
        </message>
        <message>
            <source>Previous 30 days</source>
            <translation>过去 30 天</translation>
        </message>
        <message>
            <source>Older</source>
            <translation>更早</translation>
        </message>
        <message>
            <source>New chat</source>
            <translation>新对话</translation>
        </message>
        <message>
            <source>Cannot read %1: %2</source>
            <translation>无法读取 %1：%2</translation>
        </message>
        <message>
            <source>%1 is too large to be a conversation export.</source>
            <translation>%1 太大，不可能是导出的对话。</translation>
        </message>
        <message>
            <source>%1 is not a conversation Hearth can import: %2</source>
            <translation>%1 不是 Hearth 可以导入的对话：%2</translation>
        </message>
    </context>
    <context>
        <name>hearth::app::EngineController</name>
        <message>
            <source>The model could not be loaded.</source>
            <translation>无法加载模型。</translation>
        </message>
        <message>
            <source>Starting</source>
            <translation>正在启动</translation>
        </message>
        <message>
            <source>The answer could not be generated.</source>
            <translation>无法生成回答。</translation>
        </message>
    </context>
    <context>
        <name>hearth::app::LanguageManager</name>
        <message>
            <source>System language</source>
            <translation>系统语言</translation>
        </message>
    </context>
    <context>
        <name>hearth::app::ModelLibrary</name>
        <message>
            <source>%1 does not exist.</source>
            <translation>%1 不存在。</translation>
        </message>
        <message>
            <source>%1 is neither a .gguf file nor a model folder (a folder with config.json).</source>
            <translation>%1 既不是 .gguf 文件，也不是模型文件夹（包含 config.json 的文件夹）。</translation>
        </message>
    </context>
    <context>
        <name>hearth::app::UiHelpers</name>
        <message>
            <source>%1 B</source>
            <comment>billions, e.g. of parameters</comment>
            <translation>%1B</translation>
        </message>
        <message>
            <source>%1 M</source>
            <comment>millions, e.g. of parameters</comment>
            <translation>%1M</translation>
        </message>
        <message>
            <source>%1 K</source>
            <comment>thousands</comment>
            <translation>%1K</translation>
        </message>
    </context>
    <context>
        <name>main</name>
        <message>
            <source>Run large language models on your own computer.</source>
            <translation>在您自己的电脑上运行大型语言模型。</translation>
        </message>
        <message>
            <source>Load this model at start.</source>
            <translation>启动时加载此模型。</translation>
        </message>
        <message>
            <source>Send this message once the model is loaded.</source>
            <translation>模型加载后发送此消息。</translation>
        </message>
        <message>
            <source>After the answer, save the window to this PNG and quit.</source>
            <translation>回答完成后将窗口保存为此 PNG 文件并退出。</translation>
        </message>
        <message>
            <source>cpu or gpu.</source>
            <translation>cpu 或 gpu。</translation>
        </message>
        <message>
            <source>Seconds the scripted session may take.</source>
            <translation>脚本化会话允许的秒数。</translation>
        </message>
    </context>
</TS>
