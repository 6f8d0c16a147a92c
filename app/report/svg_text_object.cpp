#include "svg_text_object.h"

#include <QAbstractTextDocumentLayout>
#include <QPainter>
#include <QSvgRenderer>
#include <QTextBlock>
#include <QTextCursor>
#include <QTextDocument>

#include <functional>

namespace bp::report {

SvgTextObject::SvgTextObject(std::vector<QByteArray> svgs, QObject *parent) : QObject(parent), m_svgs(std::move(svgs)) {}

int SvgTextObject::install(QTextDocument &document, const std::function<QString(int)> &imageName)
{
    document.documentLayout()->registerHandler(kObjectType, this);
    QHash<QString, int> indexOf;
    for (int i = 0; i < int(m_svgs.size()); ++i)
        indexOf.insert(imageName(i), i);
    // Collect first: changing formats splits fragments under the iterator.
    std::vector<std::pair<int, QTextImageFormat>> found;
    for (QTextBlock block = document.begin(); block.isValid(); block = block.next())
        for (auto it = block.begin(); !it.atEnd(); ++it) {
            const QTextFragment fragment = it.fragment();
            const QTextCharFormat format = fragment.charFormat();
            if (format.isImageFormat() && indexOf.contains(format.toImageFormat().name()))
                for (int k = 0; k < fragment.length(); ++k)
                    found.emplace_back(fragment.position() + k, format.toImageFormat());
        }
    for (const auto &[position, image] : found) {
        QTextCharFormat object;
        object.setObjectType(kObjectType);
        object.setProperty(kIndexProperty, indexOf.value(image.name()));
        object.setProperty(QTextFormat::ImageWidth, image.width());
        object.setProperty(QTextFormat::ImageHeight, image.height());
        QTextCursor cursor(&document);
        cursor.setPosition(position);
        cursor.setPosition(position + 1, QTextCursor::KeepAnchor);
        cursor.setCharFormat(object);
    }
    return int(found.size());
}

QSizeF SvgTextObject::intrinsicSize(QTextDocument *, int, const QTextFormat &format)
{
    return {format.doubleProperty(QTextFormat::ImageWidth), format.doubleProperty(QTextFormat::ImageHeight)};
}

void SvgTextObject::drawObject(QPainter *painter, const QRectF &rect, QTextDocument *, int, const QTextFormat &format)
{
    const int index = format.intProperty(kIndexProperty);
    if (index < 0 || index >= int(m_svgs.size()))
        return;
    QSvgRenderer renderer(m_svgs[std::size_t(index)]);
    renderer.render(painter, rect);
}

} // namespace bp::report
