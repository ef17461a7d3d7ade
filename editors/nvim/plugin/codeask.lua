-- codeask user commands; the language server starts after require('codeask').setup({...}).
if vim.g.loaded_codeask then return end
vim.g.loaded_codeask = true

vim.api.nvim_create_user_command('CodeaskAsk', function(opts) require('codeask').ask(opts.args) end,
  { nargs = '+', desc = 'Ask codeask a question about the workspace (sources in the quickfix list)' })
vim.api.nvim_create_user_command('CodeaskExplain', function(opts) require('codeask').explain(opts.line1, opts.line2) end,
  { range = true, desc = 'Explain the selected lines with codeask' })
vim.api.nvim_create_user_command('CodeaskRelated', function(opts) require('codeask').related(opts.args) end,
  { nargs = '?', desc = 'Definitions, callers and callees of a symbol (default: the word under the cursor) in the quickfix list' })
vim.api.nvim_create_user_command('CodeaskReindex', function() require('codeask').reindex() end,
  { desc = 'Re-index the workspace with codeask' })
vim.api.nvim_create_user_command('CodeaskStatus', function() require('codeask').status() end,
  { desc = 'Show what the codeask index holds' })
vim.api.nvim_create_user_command('CodeaskOpenCitation', function() require('codeask').open_citation() end,
  { desc = 'Open the quickfix source under the cursor (in the quickfix window; else the current one) where its code is now' })
